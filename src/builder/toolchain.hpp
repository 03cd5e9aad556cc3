// Finding and identifying the build toolchain (nvcc, the host C++ compiler and cmake).
//
// Identifying runs `nvcc --version` and `<cxx> --version` once per toolchain: the result is
// remembered on disk keyed by each executable's real path and file identity (files::identify),
// and in memory per process, so an unchanged toolchain spawns no process on later calls.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

namespace kiln::builder {

// The nvcc to use, searched in order: $KILN_NVCC (when set it must be an executable: else
// ToolchainMissingError naming it), $CUDA_HOME/bin/nvcc, $CUDA_PATH/bin/nvcc, nvcc in PATH, and
// last $KILN_CUDA_FALLBACK_DIR/bin/nvcc, that directory being /usr/local/cuda unless the variable
// is set (tests set it to simulate a machine without CUDA). Throws ToolchainMissingError listing
// every place looked at, and saying that prepared artifacts still load without a toolchain.
std::string find_nvcc();

// The host C++ compiler nvcc will use: $KILN_HOST_CXX, else $CXX, else g++ in PATH (nvcc's
// own default). A value without '/' is looked up in PATH. Throws NotFoundError naming the
// variable (or PATH) that led nowhere: a plain one, since nvcc without its host compiler is a
// broken installation to repair, not a machine without a toolchain.
std::string find_host_compiler();

struct ToolchainIdentity {
  std::string nvcc_path;         // real path (symlinks resolved) of the nvcc found
  std::string nvcc_version;      // last line of `nvcc --version`, e.g. "Build cuda_13.0.r13.0/compiler.36424714_0"
  std::string host_cxx_path;     // real path of the host compiler found
  std::string host_cxx_version;  // first line of `<cxx> --version`
  // The host compiler as found (KILN_HOST_CXX, CXX or PATH, symlinks kept): what nvcc is told to
  // run, since a wrapper (ccache's g++ link) reads the name it was run by. Not part of the
  // identity: the real path above is.
  std::string host_cxx_command;
  // "13.0.48" from "Cuda compilation tools, release 13.0, V13.0.48" (else "13.0", else empty):
  // only for messages (stale reasons name it); the four fields above identify the toolchain.
  std::string nvcc_release;
  // The compute capabilities nvcc builds SASS for (`--list-gpu-code`: 75, 80, ... 121); empty
  // where nvcc cannot list them. Checked against a build's archs, not part of the identity.
  std::vector<int> gpu_codes;
  // The variables of the environment the build inherits that change what the toolchain produces
  // (toolchain_environment in keys.hpp), those set. Read at every build, never remembered.
  std::map<std::string, std::string> environment;

  // XXH3-128 (32 hex digits) over the four identifying fields, each length-prefixed, and the
  // environment's variables (none set: the digest of the four alone). It keys units, objects
  // and content: a variable set must never be served another's object.
  std::string digest() const;
  friend bool operator==(const ToolchainIdentity &a, const ToolchainIdentity &b) {
    return a.nvcc_path == b.nvcc_path && a.nvcc_version == b.nvcc_version && a.host_cxx_path == b.host_cxx_path &&
           a.host_cxx_version == b.host_cxx_version && a.nvcc_release == b.nvcc_release &&
           a.gpu_codes == b.gpu_codes && a.environment == b.environment;
  }
  friend bool operator!=(const ToolchainIdentity &a, const ToolchainIdentity &b) { return !(a == b); }
};

// Finds nvcc and the host compiler and identifies them. Remembered in `cache_file` (JSON,
// written atomically; its directory is created) and in a per-process memo; both are keyed by
// the executables' real paths and file identities, so replacing or touching either executable
// (or pointing KILN_NVCC elsewhere) re-runs `--version`. A missing, stale or corrupt cache is
// recomputed and rewritten; failing to write it is not an error. When KILN_NVCC names a
// wrapper script, the wrapper's file identity is the key. Throws ToolchainMissingError (no
// nvcc), NotFoundError (no host compiler) or BuildError (a `--version` run failed; carries its output). Thread-safe. An empty
// cache_file touches no file: only the per-process memo remembers (for side-effect-free plans).
ToolchainIdentity identify_toolchain(const boost::filesystem::path &cache_file);

// The cmake to use for "backend": "cmake" recipes: $KILN_CMAKE (when set it must be an
// executable), else cmake in PATH. Throws ToolchainMissingError saying where it looked and that
// prepared artifacts still load without it.
std::string find_cmake();

struct CmakeIdentity {
  std::string path;     // real path of the cmake found
  std::string version;  // first line of `cmake --version`, e.g. "cmake version 3.28.3"
};

// Finds cmake and identifies it, remembered like identify_toolchain (same cache file, keyed by
// the executable's real path and file identity): an unchanged cmake spawns no process.
CmakeIdentity identify_cmake(const boost::filesystem::path &cache_file);

// Forgets the per-process memo, so that the next identify_toolchain reads its cache file.
void reset_toolchain_memo_for_tests();

}  // namespace kiln::builder
