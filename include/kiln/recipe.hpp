// kiln: recipes — everything that shapes an artifact — and what building one reports.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <kiln/cancel.hpp>
#include <kiln/identity.hpp>
#include <kiln/remote.hpp>

namespace kiln {

inline constexpr int kRecipeSchema = 1;

// A declared pre-build step (e.g. URDF -> forward-kinematics header). It runs in the recipe's
// directory; "{gen}" in its command is the directory its outputs go to, "{tool}" the tool.
struct GeneratorStep {
  std::string name;
  std::vector<std::string> command;
  std::vector<std::string> inputs;   // files, relative to the recipe (absolute after load)
  std::vector<std::string> outputs;  // file names inside {gen}
  std::string tool;                  // executable, hashed by content (absolute after load); or
  std::string tool_identity;         // a version string standing for the tool
  // Optional: a command that writes nothing and refuses (non-zero exit, the reason on its
  // output) what the step would refuse, run by plan and by build before anything is built.
  // Only {tool} is substituted. Empty: nothing to check.
  std::vector<std::string> check;
};

// A kernel a device-image (nvrtc) recipe must provide: a name expression ("saxpy",
// "scale<float>", "ns::step<3>") and, when the recipe has several sources, the one defining it.
struct RecipeKernel {
  std::string name;
  std::string source;  // absolute after load; empty: the recipe's only source
};

struct Recipe {
  int schema = kRecipeSchema;
  std::string consumer;
  std::string name;
  std::string backend = "nvcc";          // "nvcc" (shared-object plugin); "nvrtc" (device images);
                                         // "cmake" (a plugin built by a CMake project)
  std::vector<std::string> sources;      // .cu/.cpp/.cc; one object each (absolute after load)
  std::vector<std::string> headers;      // files or directories, hashed by content as one set
  std::vector<std::string> include_dirs; // searched by the compiler (absolute after load)
  std::vector<std::string> defines;      // NAME or NAME=VALUE
  std::vector<std::string> flags;        // extra compile flags
  std::vector<std::string> link_flags;
  std::vector<std::string> archs;        // sm_90, sm_87, compute_90, sm_90a, ... or "native"
  std::string artifact;                  // output file name, e.g. libik.so; nvrtc: the image index
                                         // ("<name>.images" by default)
  std::vector<RecipeKernel> kernels;     // nvrtc only (required there): kernels to record and resolve
  bool lto = false;                      // nvrtc only: compile to LTO-IR and link with nvJitLink -lto
  std::vector<GeneratorStep> generators;
  // cmake only (docs/recipes.md "Plugins from a CMake project"): the project, what of it keys the
  // build, and what it builds.
  std::string project;                   // directory holding CMakeLists.txt (absolute after load)
  std::vector<std::string> project_files;  // globs relative to `project`, hashed by content
  std::map<std::string, std::string> cmake_options;  // -DNAME=VALUE; values may hold {gen}, {abi}
  std::string target;                    // cmake --build --target
  std::string output;                    // the file `target` writes, relative to the build directory
  std::uint64_t unit_memory_mb = 4096;   // memory one compile may take; bounds parallel jobs
  std::string base_dir;                  // the recipe file's directory
  std::string file;                      // the recipe file, for messages

  // Parse and validate a recipe file; relative paths are taken from its directory. Throws
  // UsageError naming the file, the field and the fix; NotFoundError for missing inputs.
  static Recipe load(const std::string &path);
  static Recipe parse(const std::string &json_text, const std::string &base_dir, const std::string &file_for_errors);
  // The recipe as JSON with paths relative to base_dir (the form that keys the input key).
  std::string canonical_json() const;
  // Whether the recipe builds a shared-object plugin (nvcc, cmake) rather than device images.
  bool builds_plugin() const { return backend != "nvrtc"; }
};

// One step of a build, reported as it happens (from the building thread(s)).
struct BuildEvent {
  // units_queued comes first, once a build knows what it will compile (total: how many units);
  // each unit then starts and finishes (cached: served by the object cache). Generators and
  // the link are steps of their own.
  enum class Kind {
    generator_started, generator_finished, unit_started, unit_finished, link_started, link_finished, units_queued
  };
  Kind kind;
  std::string name;       // generator name, unit (source file name), artifact, or consumer/name (units_queued)
  double seconds = 0;     // for *_finished
  bool cached = false;    // unit served from the object cache; generator step reused
  std::size_t total = 0;  // units_queued: how many units this build runs
};
// Called from the build's worker threads, one call at a time (the builder serializes them);
// it should return quickly, since a unit's worker waits for it.
using BuildProgress = std::function<void(const BuildEvent &)>;

struct BuildOptions {
  bool force = false;               // recompile every unit (ignore bykey and the object cache)
  unsigned jobs = 0;                // 0: KILN_JOBS, else the number of cores; bounded by memory
  std::vector<Arch> archs;          // overrides the recipe's archs when not empty
  BuildProgress progress;
  const CancelToken *cancel = nullptr;  // polled; once cancelled the build stops and kills nvcc
  // Remote caches (kiln/remote.hpp): asked before compiling and given what was built. false:
  // this build neither asks nor uploads (kiln build --no-remote).
  bool use_remote = true;
  // Only a remote may provide it: a miss there is NotFoundError and nothing is compiled
  // (kiln remote pull).
  bool remote_only = false;
};

struct UnitReport {
  std::string name;
  bool cached = false;
  double seconds = 0;
};

struct BuildResult {
  // hit: bykey; reused: same content key existed; fetched: downloaded from a remote cache
  enum class Outcome { hit, reused, built, fetched };
  Outcome outcome = Outcome::built;
  std::string consumer;
  std::string name;
  std::string input_key;
  std::string content_key;
  std::string entry_dir;
  std::vector<Arch> archs;
  std::vector<UnitReport> units;
  double seconds = 0;
  std::string remote;                    // fetched: the remote it came from
  std::string remote_signed_by;          // fetched: key id of the signature verified; empty: not checked
  std::vector<RemoteTransfer> uploads;   // built: what went to each read-write remote (never an error)
  std::string layer;                     // hit in a read-only layer (its root); empty: the writable cache
};
const char *to_string(BuildResult::Outcome outcome);

// What a build would do, computed without side effects.
struct BuildPlan {
  std::string consumer;
  std::string name;
  std::string input_key;
  std::optional<std::string> content_key;  // known when a bykey pointer exists
  std::string state;                       // "cached", "stale", "missing"
  // Where a build would take it from: "local" (cached), "remote <url>" (the first remote that
  // has it by input key), else "build".
  std::string source;
  std::vector<Reason> stale_reasons;
  std::vector<Arch> archs;
  std::string backend;                     // "nvcc", "nvrtc" or "cmake"
  std::string nvcc;                        // toolchain used (nvcc backend)
  std::string nvcc_version;
  std::string host_compiler;
  std::string cmake;                       // cmake backend: the cmake used and its version line
  std::string cmake_version;
  std::string jit_toolchain;               // nvrtc backend: "nvrtc=13.0;nvjitlink=13.0;nvfatbin=none"
  std::vector<std::string> steps;          // human-readable: generators, units, link
  std::size_t units = 0;                   // nvcc backend: units a build would run
  std::size_t units_cached = 0;            // of those, served by the object cache (0 with generators: unknown)
};

}  // namespace kiln
