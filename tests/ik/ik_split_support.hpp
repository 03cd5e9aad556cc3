// kiln IK tests of the split form (plugins/ik/README.md, "Split form"): a store holding the two
// recipes' artifacts (the NVRTC device images and the host part), and one solve of random
// reachable targets judged by the plugin's own double fk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "ik/ik_solve_check.hpp"
#include "support/fixtures.hpp"

namespace kiln::test::ik_split {

inline std::string recipe_file(const std::string &name) { return std::string(KILN_IK_RECIPES_DIR) + "/" + name + ".json"; }

constexpr const char *kKernels = "iiwa14-split-kernels";
constexpr const char *kHostPart = "iiwa14-split";

// A temporary cache with kiln-ik/iiwa14-split-kernels (NVRTC) built, for the declared device
// (nullopt: the live one); the host part is built too when `host_part` (nvcc backend, g++).
struct SplitStore {
  SplitStore(std::optional<std::string> declared, bool host_part) {
    RuntimeOptions options;
    options.cache_dir = (dir / "cache").string();
    options.declared_device = std::move(declared);
    runtime = std::make_unique<Runtime>(options);
    kernels = runtime->build(Recipe::load(recipe_file(kKernels)));
    if (host_part) host = runtime->build(Recipe::load(recipe_file(kHostPart)));
  }
  // The CMake-built host part (kiln_ik_iiwa14_split) published as kiln-ik/iiwa14-split-cmake.
  Module publish_cmake_host_part() {
    PublishRequest request;
    request.consumer = "kiln-ik";
    request.name = "iiwa14-split-cmake";
    request.artifact_file = KILN_IK_PLUGIN_IIWA14_SPLIT;  // host code only: no archs
    runtime->publish(request);
    return runtime->load("kiln-ik", "iiwa14-split-cmake");
  }
  TempDir dir;
  std::unique_ptr<Runtime> runtime;
  BuildResult kernels, host;
};

}  // namespace kiln::test::ik_split
