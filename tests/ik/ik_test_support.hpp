// kiln IK tests: loading an IK plugin through kiln::Runtime and filling kiln.ik/1 structs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/runtime.hpp>

#include "kiln_ik_batch.hpp"
#include "support/fixtures.hpp"

namespace kiln::test::ik {

// A plugin file published into a temporary cache and loaded: the store, the runtime, the module.
struct LoadedPlugin {
  explicit LoadedPlugin(const std::string &file, std::optional<std::string> declared_device = std::string("sm_90")) {
    RuntimeOptions options;
    options.cache_dir = (dir / "cache").string();
    options.declared_device = std::move(declared_device);
    runtime = std::make_unique<Runtime>(options);
    PublishRequest request;
    request.consumer = "ik-tests";
    request.name = "solver";
    request.artifact_file = file;
    request.archs = Arch::parse_list(KILN_IK_PLUGIN_ARCHS);
    published = runtime->publish(request);
    module.emplace(runtime->load("ik-tests", "solver"));
  }
  TempDir dir;
  std::unique_ptr<Runtime> runtime;
  PublishResult published;
  std::optional<Module> module;
};

inline kiln_ik_options options(uint32_t seeds = 0, uint32_t max_iterations = 0, uint64_t random_seed = 0) {
  kiln_ik_options o{};
  o.struct_size = sizeof o;
  o.seeds_per_target = seeds;
  o.max_iterations = max_iterations;
  o.random_seed = random_seed;
  return o;
}

// Host-side buffers of one batch and the structs pointing at them.
using Batch = kiln_ik::HostBatch;

}  // namespace kiln::test::ik
