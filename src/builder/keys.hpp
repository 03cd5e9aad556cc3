// The two-stage keys of build on miss (docs/architecture.md §3) and the build identity they stand for.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <boost/filesystem/path.hpp>

#include <kiln/identity.hpp>
#include <kiln/recipe.hpp>

#include "builder/tool_digests.hpp"
#include "builder/toolchain.hpp"

namespace kiln::builder {

// Everything besides the recipe that shapes the binary. Recorded beside the artifact
// (identity.json provenance) and compared field by field before a bykey hit is honoured.
struct BuildIdentity {
  std::string backend = "nvcc";                   // the recipe's backend
  std::vector<Arch> archs;
  ToolchainIdentity toolchain;                    // nvcc backend: nvcc and the host compiler
  std::string abi_headers;                        // nvcc, cmake: digest of kiln's abi/ headers compiled in
  CmakeIdentity cmake;                            // cmake backend: the cmake configuring and building
  std::string jit_toolchain;                      // nvrtc backend: "nvrtc=13.0;nvjitlink=13.0;nvfatbin=none"
  std::map<std::string, std::string> generators;  // name -> tool digest or identity string

  std::map<std::string, std::string> fields() const;  // flat, for provenance and comparison
};

// The variables of this process's environment that nvcc, the host compiler and linker (and for
// the cmake backend, CMake) read and that change their output, with their values, those set.
std::map<std::string, std::string> toolchain_environment(const std::string &backend);

// path relative to base (path itself when it has no relative form): how recipe files are named in keys.
std::string relative_to(const std::string &path, const std::string &base);
// One input file's bytes as the keys hash them (files::Hasher::add_file: streamed, framed).
std::string input_file_digest(const boost::filesystem::path &file);
// "sm_87,sm_110,compute_87": archs as keys, plans and logs write them.
std::string arch_list(const std::vector<Arch> &archs);

// The declared headers as a sorted list of files (directories expanded recursively).
std::vector<std::string> expand_headers(const Recipe &recipe);

// Digest of every file under the ABI include directory (kiln/*.h, *.hpp): plugins compile
// against them, so they key both stages. Memoised per directory for the process.
std::string abi_headers_digest(const std::string &abi_dir);
// The same digest from (path relative to the directory, XXH3 of its bytes), sorted by path.
std::string abi_files_digest(const std::vector<std::pair<std::string, std::string>> &files);
// Seeds abi_headers_digest's memo: the directory holds exactly the bytes of that digest.
void remember_abi_digest(const std::string &abi_dir, const std::string &digest);

// `tools`: where generator tools' digests are remembered (builder/tool_digests.hpp).
BuildIdentity build_identity(const Recipe &recipe, const std::vector<Arch> &archs, const ToolchainIdentity &toolchain,
                             const std::string &abi_dir, const ToolDigestMemo &tools = {});
// The cmake backend's: nvcc's, and the cmake.
BuildIdentity cmake_build_identity(const Recipe &recipe, const std::vector<Arch> &archs,
                                   const ToolchainIdentity &toolchain, const CmakeIdentity &cmake,
                                   const std::string &abi_dir, const ToolDigestMemo &tools = {});
// The nvrtc backend's: no nvcc, no host compiler, no ABI headers (device images do not
// compile against them); the JIT libraries' versions instead.
BuildIdentity jit_build_identity(const Recipe &recipe, const std::vector<Arch> &archs, const std::string &jit_toolchain,
                                 const ToolDigestMemo &tools = {});

// What a build saw, input by input, for identity.json's provenance: "input:source plugin.cu" ->
// its digest, "input:header ...", "input:generator_input ...", "input:define N" -> its value,
// "input:recipe flags" -> the recipe field as JSON (one per other recipe field), and
// "toolchain:nvcc_release" / "toolchain:nvcc_path" / "toolchain:host_compiler_path". Keys
// nothing (the input key covers all of it): it lets a later build name what changed (stale.hpp).
using InputRecords = std::map<std::string, std::string>;

// Canonical recipe + bytes of every input file (sources, headers, project files, generator inputs and tools)
// + the build identity. Cheap: hashing only, no process. `records` (optional) receives the
// files' records, of exactly the bytes hashed.
std::string input_key(const Recipe &recipe, const BuildIdentity &identity, InputRecords *records = nullptr);
// The recipe's and the toolchain's records (only a miss needs them: a hit compares nothing).
void add_recipe_records(const Recipe &recipe, const BuildIdentity &identity, InputRecords &records);

// Reasons a recorded build identity differs from the current one (empty when equal).
std::vector<Reason> identity_differences(const std::map<std::string, std::string> &recorded,
                                         const std::map<std::string, std::string> &current);

}  // namespace kiln::builder
