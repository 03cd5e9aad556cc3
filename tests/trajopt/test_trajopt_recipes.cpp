// The TrajOpt recipes kiln ships (plugins/trajopt/recipes/*.json.in, as CMake configured them):
// each loads as a cmake-backend recipe whose globs match the module's files, and the per-N
// variants plan as distinct builds that share one generator step (GATO's per-N modules). The
// builds themselves run in the main job and the gpu suite; a CMake project build is what
// tests/unit/test_build_cmake.cpp covers.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

namespace {

const std::string kRecipes = KILN_TRAJOPT_RECIPES_DIR;

kiln::Recipe load(const std::string &name) { return kiln::Recipe::load(kRecipes + "/" + name + ".json"); }

}  // namespace

TEST_CASE("trajopt recipes: each shipped recipe loads as a cmake recipe of its robot and horizon") {
  for (const char *name : {"trajopt-iiwa14-N32", "trajopt-iiwa14-N64", "trajopt-iiwa14-N128", "trajopt-panda-N64"}) {
    CAPTURE(name);
    const kiln::Recipe recipe = load(name);
    CHECK(recipe.backend == "cmake");
    CHECK(recipe.consumer == "kiln-trajopt");
    CHECK(std::string("trajopt-") + recipe.name == name);
    const std::string n = recipe.name.substr(recipe.name.find("-N") + 2);
    REQUIRE(recipe.cmake_options.count("KILN_TRAJOPT_N") == 1);
    CHECK(recipe.cmake_options.at("KILN_TRAJOPT_N") == n);
    REQUIRE(recipe.generators.size() == 1);
    CHECK(recipe.generators[0].outputs.size() == 2);
    // plugins/common (what kiln.trajopt shares with kiln.ik) keys the build too.
    CHECK(std::find(recipe.project_files.begin(), recipe.project_files.end(), "../../common/*.hpp") !=
          recipe.project_files.end());
  }
}

TEST_CASE("trajopt recipes: the horizons plan as three builds with one generator step" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  kiln::test::TempDir cache;
  kiln::test::ScopedEnv store("KILN_CACHE_DIR", cache.path().string());
  kiln::test::ScopedEnv path("KILN_STORE_PATH", std::nullopt);
  kiln::test::ScopedEnv device("KILN_DEVICE", std::string("sm_90"));
  kiln::Runtime runtime;
  std::set<std::string> keys;
  for (const char *name : {"trajopt-iiwa14-N32", "trajopt-iiwa14-N64", "trajopt-iiwa14-N128"}) {
    CAPTURE(name);
    const kiln::Recipe recipe = load(name);
    const kiln::BuildPlan plan = runtime.plan(recipe);
    CHECK(plan.backend == "cmake");
    CHECK(plan.state == "missing");
    keys.insert(plan.input_key);
    // The generator's command, inputs and tool are the same in every horizon: one cached step.
    CHECK(recipe.generators[0].command == load("trajopt-iiwa14-N64").generators[0].command);
  }
  CHECK(keys.size() == 3);
}
