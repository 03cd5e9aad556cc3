// Build on miss (docs/architecture.md §3): input key -> bykey hit, else under the input key's build lock:
// staging -> generators -> content key -> reuse, or compile into staging (nvcc: units from the
// object cache or nvcc -c in parallel, link, stamp; nvrtc: NVRTC/nvJitLink in process, one image
// per arch, a fatbin where nvFatbin exists) -> meta/identity/build.log -> rename into the store
// -> bykey pointer -> manifest. One flow; the backends (builder/backend.hpp) differ only in the
// toolchain identity, the content key and the compile step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/log.hpp>
#include <kiln/recipe.hpp>

#include "store/entry_source.hpp"
#include "store/storage.hpp"

namespace kiln::builder {

struct BuilderContext {
  const store::Storage *storage = nullptr;  // builds publish into its writable cache
  // Where else a result may come from (the remote caches), asked on a build's first need: a
  // build that hits locally reads no remote configuration. Empty, or nullptr: none.
  std::function<std::shared_ptr<const store::EntrySource>()> elsewhere;
  boost::filesystem::path toolchain_cache;  // remembered toolchain identity (JSON)
  std::string abi_dir;                    // the ABI include directory (builder/abi_headers.hpp)
  bool abi_embedded = false;              // abi_dir is the embedded headers' copy: written before a compile
  std::vector<DeviceIdentity> devices;    // for "native"
  LogCallback log;
};

// The archs a build targets: options.archs when given, else the recipe's with "native"
// replaced by the devices' archs. Throws UsageError when "native" has no device.
std::vector<Arch> resolve_archs(const Recipe &recipe, const BuildOptions &options,
                                const std::vector<DeviceIdentity> &devices);

BuildPlan plan_build(const Recipe &recipe, const BuildOptions &options, const BuilderContext &context);
BuildResult run_build(const Recipe &recipe, const BuildOptions &options, const BuilderContext &context);

// How many NVRTC compiles (one per nvrtc-backend build that was not a hit or a reuse) this
// process ran: a hit must not add one. For tests and benchmarks.
std::uint64_t jit_compile_count() noexcept;

// 13000 from "Build cuda_13.0.r13.0/compiler..." (0 when it cannot tell).
int toolkit_version_from(const std::string &nvcc_version);

}  // namespace kiln::builder
