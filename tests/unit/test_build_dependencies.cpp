// Never silently stale: the headers a unit really includes come from the compiler (nvcc -MMD
// -MF), key its object and are recorded in the entry, so an edit to a header the recipe does
// not declare makes the hit stale (named in the plan) and rebuilds exactly the units that
// include it; reverting it reuses the old entry from the object cache.
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/ext/example.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/dependencies.hpp"
#include "support/build_recipe.hpp"
#include "support/cmake_project.hpp"
#include "support/checks.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::contains;
using kiln::test::write_text;
namespace fs = boost::filesystem;

TEST_CASE("depfile: every rule's prerequisites, with continuations, escapes and $$") {
  const std::string text =
      "obj/a.o : /src/a.cu \\\n    /src/inc/my\\ h.cuh \\\r\n /usr/local/cuda/include/cuda.h\n"
      "/src/inc/my\\ h.cuh:\n"                       // -MP's phony rule adds nothing new
      "b.o: b.cpp /src/$$dollar.h /src/a\\#b.h\n";
  const std::vector<std::string> paths = builder::parse_depfile(text);
  const std::vector<std::string> expected = {"/src/a.cu", "/src/inc/my h.cuh", "/usr/local/cuda/include/cuda.h",
                                             "b.cpp", "/src/$dollar.h", "/src/a#b.h"};
  CHECK(paths == expected);
  CHECK(builder::parse_depfile("").empty());
  CHECK(builder::parse_depfile("a.o:").empty());
  CHECK(builder::parse_depfile("a.o: x.h").size() == 1);
}

TEST_CASE("depfile: what is recorded: $RECIPE-relative, absolute elsewhere; not the source, toolkit, ABI or {gen}") {
  kiln::test::TempDir dir;
  for (const char *file : {"r/a.cu", "r/inc/x.cuh", "r/gen/g.h", "abi/kiln/plugin.h", "cuda/include/cuda.h", "other/y.h",
                           "tk/targets/include/cuda_runtime.h", "tk/targets/include/crt/host_config.h"}) {
    fs::create_directories((dir / file).parent_path());
    write_text(dir / file, "//\n");
  }
  const std::string root = fs::canonical(dir.path()).string();
  builder::DependencyRoots roots{root + "/r", root + "/abi", root + "/r/gen", root + "/cuda/include", root + "/r"};
  const auto recorded = builder::recorded_dependencies(
      {root + "/r/a.cu", "inc/x.cuh", root + "/r/gen/g.h", root + "/abi/kiln/plugin.h", root + "/cuda/include/cuda.h",
       root + "/tk/targets/include/crt/host_config.h", root + "/other/y.h", root + "/r/inc/../inc/x.cuh",
       root + "/tk/targets/include/cuda_runtime.h"},  // nvcc's forced include marks the toolkit's headers
      root + "/r/a.cu", roots);
  const std::vector<std::string> expected = {"$RECIPE/inc/x.cuh", root + "/other/y.h"};
  CHECK(recorded == expected);
  const auto digests = builder::dependency_digests({"$RECIPE/inc/x.cuh", "$RECIPE/gone.h"}, root + "/r");
  CHECK(digests.at("$RECIPE/gone.h") == "(missing)");
  CHECK(digests.at("$RECIPE/inc/x.cuh").size() == 32);

  // The record beside the objects: a torn one reads as none (the unit compiles again).
  builder::write_dependency_record(dir / "u.deps", expected);
  CHECK(builder::read_dependency_record(dir / "u.deps") == expected);
  write_text(dir / "u.deps", "{\"dependencies\": [");
  CHECK_FALSE(builder::read_dependency_record(dir / "u.deps"));
  CHECK_FALSE(builder::read_dependency_record(dir / "absent.deps"));
}

namespace {


const UnitReport &unit_named(const BuildResult &result, const std::string &name) {
  for (const auto &unit : result.units) {
    if (unit.name == name) return unit;
  }
  FAIL("no unit " << name);
  return result.units.front();
}

}  // namespace

TEST_CASE("build: an undeclared header's edit is a stale hit naming it, and rebuilds only the unit including it" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  kiln::test::BuildRecipeDir fx;
  // helper.cpp includes a header the recipe does not declare (only common.h is declared).
  fs::create_directories(fx.src() / "inc");
  write_text(fx.src() / "inc" / "extra.h", "#pragma once\n#define EXTRA 0.5\n");
  fx.edit("helper.cpp", "#include \"common.h\"", "#include \"common.h\"\n#include \"inc/extra.h\"");
  fx.edit("helper.cpp", "COMMON_BASE * SCALE", "COMMON_BASE * SCALE + EXTRA");
  Runtime runtime(fx.options());

  const BuildResult first = runtime.build(fx.recipe());
  REQUIRE(first.outcome == BuildResult::Outcome::built);
  CHECK_FALSE(unit_named(first, "helper.cpp").cached);
  const double before = kiln::test::two_units_answer(runtime);
  CHECK(runtime.plan(fx.recipe()).state == "cached");

  write_text(fx.src() / "inc" / "extra.h", "#pragma once\n#define EXTRA 0.75\n");
  const BuildPlan plan = runtime.plan(fx.recipe());
  CHECK(plan.state == "stale");
  CHECK(plan.input_key == first.input_key);  // the recipe's declared inputs did not change
  REQUIRE(plan.stale_reasons.size() == 1);
  CHECK(plan.stale_reasons[0].field == "header $RECIPE/inc/extra.h");
  CHECK(contains(plan.stale_reasons[0].note, "included header changed"));

  const BuildResult second = runtime.build(fx.recipe());
  CHECK(second.outcome == BuildResult::Outcome::built);
  CHECK(second.content_key != first.content_key);
  CHECK(unit_named(second, "plugin.cu").cached);        // does not include extra.h
  CHECK_FALSE(unit_named(second, "helper.cpp").cached);  // does
  CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(before + 0.25));
  CHECK(runtime.plan(fx.recipe()).state == "cached");
  CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::hit);

  // Back to the first version: both objects are cached, and so is the first entry.
  write_text(fx.src() / "inc" / "extra.h", "#pragma once\n#define EXTRA 0.5\n");
  const BuildResult third = runtime.build(fx.recipe());
  CHECK(third.outcome == BuildResult::Outcome::reused);
  CHECK(third.content_key == first.content_key);
  for (const auto &unit : third.units) CHECK(unit.cached);
  CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(before));

  // A header that is gone is a reason too (the build then fails in the compiler, as it should).
  fs::remove(fx.src() / "inc" / "extra.h");
  const BuildPlan gone = runtime.plan(fx.recipe());
  REQUIRE(gone.stale_reasons.size() == 1);
  CHECK(gone.stale_reasons[0].current == "(missing)");
}

TEST_CASE("plan: units the object cache holds are counted as cached" * kiln::test::skip_if(kiln::test::no_toolchain)) {
  kiln::test::TempDir dir;
  fs::create_directories(dir / "r");
  fs::copy_file(fs::path(KILN_TEST_SOURCE_DIR) / "examples" / "plugin" / "plugin.cpp", dir / "r" / "plugin.cpp");
  write_text(dir / "r" / "a.cpp", "#include \"a.h\"\nint a_value() { return A; }\n");
  write_text(dir / "r" / "a.h", "#define A 1\n");
  write_text(dir / "r" / "recipe.json", R"({"schema": 1, "consumer": "plan-tests", "name": "two", "sources": ["plugin.cpp", "a.cpp"],
 "archs": ["sm_90"], "artifact": "libtwo.so"})");
  RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  options.declared_device = "sm_90";
  Runtime runtime(options);
  const Recipe recipe = Recipe::load((dir / "r" / "recipe.json").string());
  BuildPlan plan = runtime.plan(recipe);
  CHECK(plan.units == 2);
  CHECK(plan.units_cached == 0);
  runtime.build(recipe);
  write_text(dir / "r" / "a.h", "#define A 3\n");
  plan = runtime.plan(recipe);
  CHECK(plan.state == "stale");
  CHECK(plan.units == 2);
  CHECK(plan.units_cached == 1);  // plugin.cpp; a.cpp includes the edited a.h
  bool said = false;
  for (const auto &step : plan.steps) said = said || step == "take plugin.cpp from the object cache";
  CHECK(said);
  const BuildResult rebuilt = runtime.build(recipe);
  CHECK(unit_named(rebuilt, "plugin.cpp").cached);
  CHECK_FALSE(unit_named(rebuilt, "a.cpp").cached);
}

TEST_CASE("cmake build: a header outside project_files is taken from the compilers' depfiles: its edit is stale and rebuilds" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  // The Makefile generator leaves the depfiles beside the objects; ninja keeps them in .ninja_deps.
  std::optional<kiln::test::ScopedEnv> generator;
  SUBCASE("Unix Makefiles") { generator.emplace("CMAKE_GENERATOR", "Unix Makefiles"); }
  SUBCASE("Ninja") {
    if (std::system("command -v ninja >/dev/null 2>&1") != 0) {
      kiln::test::report_skip("cmake build with the Ninja generator", "no ninja in PATH (Debian: ninja-build)");
      return;
    }
    generator.emplace("CMAKE_GENERATOR", "Ninja");
  }
  kiln::test::CmakeProjectDir fx;
  // common.hpp is included by the project's plugin.cpp, but this recipe does not declare it.
  const Recipe recipe = fx.variant("recipe-N4.json", [](nlohmann::json &r) {
    r["project_files"] = nlohmann::json::array({"CMakeLists.txt", "*.cpp", "*.sh"});
  });
  Runtime runtime(fx.options());
  const BuildResult first = runtime.build(recipe);
  REQUIRE(first.outcome == BuildResult::Outcome::built);
  CHECK(fx.answer(runtime, "plugin-N4") == doctest::Approx(7.0 + 4.0 + 3.0 + 100.0));
  CHECK(runtime.plan(recipe).state == "cached");
  fx.take_cmake_runs();

  const fs::path common = fx.dir() / "src" / "common" / "common.hpp";
  write_text(common, "#pragma once\n#define COMMON_BASE 200.0\n");
  const BuildPlan plan = runtime.plan(recipe);
  CHECK(plan.state == "stale");
  REQUIRE(plan.stale_reasons.size() == 1);
  CHECK(plan.stale_reasons[0].field == "header " + fs::canonical(common).string());
  const BuildResult second = runtime.build(recipe);
  CHECK(second.outcome == BuildResult::Outcome::built);
  CHECK(second.content_key != first.content_key);
  CHECK(fx.answer(runtime, "plugin-N4") == doctest::Approx(7.0 + 4.0 + 3.0 + 200.0));
  CHECK(fx.take_cmake_runs().builds == 1);
  CHECK(runtime.build(recipe).outcome == BuildResult::Outcome::hit);

  // Back to the first version: the key is known before building (the record), and the entry is there.
  write_text(common, "#pragma once\n#define COMMON_BASE 100.0\n");
  const BuildResult third = runtime.build(recipe);
  CHECK(third.outcome == BuildResult::Outcome::reused);
  CHECK(third.content_key == first.content_key);
  CHECK(fx.take_cmake_runs().all == 0);  // nothing configured or built
  CHECK(fx.answer(runtime, "plugin-N4") == doctest::Approx(7.0 + 4.0 + 3.0 + 100.0));
}
