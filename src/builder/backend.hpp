// kiln internal: the backend-specific half of build on miss (docs/architecture.md §3).
//
// builder.cpp runs one flow for every backend -- input key -> bykey hit -> build lock ->
// re-check -> staging -> generators -> content key -> reuse or compile -> meta.json,
// identity.json, build.log -> rename into the store -> bykey -> manifest -- and asks a Backend
// only what differs: which toolchain identifies the build, what the content key covers, and how
// to compile into the staging directory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/module.hpp>
#include <kiln/recipe.hpp>

#include "builder/builder.hpp"
#include "builder/keys.hpp"
#include "builder/process.hpp"
#include "store/layout.hpp"

namespace kiln::builder {

// A build that has its staging directory and whose generators ran.
struct StagedBuild {
  const Recipe &recipe;
  const BuildOptions &options;
  const BuilderContext &context;
  const std::vector<Arch> &archs;
  const BuildIdentity &identity;
  const store::ConsumerLayout &layout;
  boost::filesystem::path staging;    // becomes the entry: everything left here is published
  boost::filesystem::path gen;        // generators' outputs ({gen}), inside staging
  boost::filesystem::path build_log;  // staging/build.log
  std::vector<std::string> generated;  // absolute paths of the generated outputs, sorted
  CancelToken &cancel;
};

// What a backend's compile step left in the staging directory.
struct Produced {
  std::string kind;                    // kKindPlugin or kKindImages (kiln/module.hpp) (meta.json, manifest)
  std::string file;                    // the artifact file, in staging
  std::string bytes_digest;            // XXH3-128 of that file
  std::uint64_t size = 0;
  std::uint32_t abi_version = 0;       // plugin ABI of the stamp; 0 for images
  int cuda_toolkit_version = 0;        // what wrote the PTX
  std::vector<ArtifactImage> images;   // kind "images"
  std::vector<ArtifactKernel> kernels; // kind "images"
  std::vector<UnitReport> units;
  std::vector<RobotModel> models;      // what its .kiln.model section holds (identity.json)
  std::map<std::string, std::string> provenance;  // added to identity.json's provenance
  bool settled_on_existing = false;    // settle() said an intact entry has the content key: nothing was made
};

// For a content key known only once the units compiled (nvcc: a unit's header dependencies
// come from the compiler): the backend calls it with the key before it links. false: an intact
// entry of that key exists; the backend stops and returns with settled_on_existing set.
using SettleContentKey = std::function<bool(const std::string &content_key)>;

class Backend {
 public:
  virtual ~Backend() = default;

  // The build identity (keys both stages, recorded beside the artifact). Throws
  // ToolchainMissingError when the backend's toolchain is absent (nothing else is touched then). `remember`: whether
  // toolchain probes may be remembered on disk (false for plan: no side effect).
  virtual BuildIdentity identity(const Recipe &recipe, const std::vector<Arch> &archs, bool remember) = 0;
  // Lines for build.log's header: the toolchain used.
  virtual std::string toolchain_text() const = 0;
  // Fills the backend's part of a plan (toolchain fields, compile steps, units the object cache serves).
  virtual void plan(const Recipe &recipe, const BuildOptions &options, const BuildIdentity &identity,
                    BuildPlan &plan) const = 0;
  // After the generators: the content key -- a hash of exactly what the compiler will see --
  // where it is known before compiling (nullopt: compile() settles it).
  virtual std::optional<std::string> content_key(const StagedBuild &build) = 0;
  // Compile into build.staging. Only the entry's files may stay there when it returns (its
  // scratch is its own to remove); a failure throws (BuildError with the log) and the flow
  // removes the staging directory.
  // `content_key`: content_key()'s answer, or empty; a backend that learns the key while
  // compiling calls settle() before it links (and must when content_key was empty).
  virtual Produced compile(const StagedBuild &build, const std::string &content_key, const SettleContentKey &settle) = 0;
};

// Where a backend's identity() remembers generator tools' digests: in toolchain.json with the
// toolchain's facts, written only when `remember` (a plan writes nothing).
inline ToolDigestMemo tool_digest_memo(const BuilderContext &context, bool remember) {
  return {context.toolchain_cache, remember};
}

std::unique_ptr<Backend> make_nvcc_backend(const BuilderContext &context);
std::unique_ptr<Backend> make_nvrtc_backend(const BuilderContext &context);
std::unique_ptr<Backend> make_cmake_backend(const BuilderContext &context);

// "exit code 2", "killed by signal 9".
std::string how_it_ended(const ProcessResult &result);
// Throws BuildError "<what> failed (<how>); nothing was published" with the step's output; an
// IoError instead when the output says the disk was full (ENOSPC, EDQUOT).
[[noreturn]] void fail_step(const std::string &what, const ProcessResult &result);

// Appends to a file (build.log).
void append_log(const boost::filesystem::path &file, const std::string &text);

}  // namespace kiln::builder
