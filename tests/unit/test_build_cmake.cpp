// The cmake backend (docs/recipes.md "Plugins from a CMake project", docs/architecture.md §3):
// recipe validation, what keys a build, hits that spawn nothing, generator outputs shared by N
// variants, and one build per key.
// The project is tests/data/cmake: C++ only, so that CI's many configures stay cheap.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/abi_headers.hpp"
#include "builder/builder.hpp"
#include "builder/toolchain.hpp"
#include "support/checks.hpp"
#include "support/cmake_project.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::CmakeProjectDir;
using kiln::test::read_text;
using kiln::test::ScopedEnv;
using kiln::test::write_text;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

using kiln::test::contains;

// The N4 recipe with `edit` applied, parsed: the UsageError's message ("" when it parses).
std::string refusal(const CmakeProjectDir &fx, const std::function<void(json &)> &edit) {
  json recipe = json::parse(read_text(fx.recipe_file()));
  edit(recipe);
  try {
    Recipe::parse(recipe.dump(), fx.recipes().string(), "bad.json");
    return "";
  } catch (const UsageError &error) {
    return error.what();
  }
}

// An N variant of the N4 recipe: its own name, plugin id and artifact.
Recipe n_variant(const CmakeProjectDir &fx, int n) {
  const std::string tag = "N" + std::to_string(n);
  return fx.variant("recipe-" + tag + ".json", [&](json &recipe) {
    recipe["name"] = "plugin-" + tag;
    recipe["artifact"] = "libkiln_test_cmake_" + tag + ".so";
    recipe["cmake_options"]["KILN_TEST_N"] = std::to_string(n);
    recipe["cmake_options"]["KILN_TEST_PLUGIN_ID"] = "org.kiln.test.cmake.n" + std::to_string(n);
  });
}

}  // namespace

TEST_SUITE("cmake_backend") {

TEST_CASE("cmake recipe: every field is validated, naming the recipe, the field and the fix") {
  CmakeProjectDir fx;
  CHECK(refusal(fx, [](json &) {}).empty());
  const auto refused = [&](const std::function<void(json &)> &edit, const std::string &field, const std::string &fix) {
    const std::string why = refusal(fx, edit);
    CAPTURE(why);
    CHECK(contains(why, "recipe bad.json"));
    CHECK(contains(why, "\"" + field + "\""));
    CHECK(contains(why, fix));
  };
  refused([](json &r) { r.erase("project"); }, "project", "is missing");
  refused([](json &r) { r["project"] = "."; }, "project", "has no CMakeLists.txt");
  refused([](json &r) { r.erase("project_files"); }, "project_files", "list globs");
  refused([](json &r) { r["project_files"] = json::array(); }, "project_files", "list globs");
  refused([](json &r) { r["project_files"].push_back("*.nothing"); }, "project_files", "matches no file");
  refused([](json &r) { r["project_files"] = {"/etc/*"}; }, "project_files", "relative to \"project\"");
  refused([](json &r) { r["project_files"] = {"**/*.cpp"}; }, "project_files", "not supported");
  refused([](json &r) { r["cmake_options"] = {"N=4"}; }, "cmake_options", "object");
  refused([](json &r) { r["cmake_options"]["BAD-NAME"] = "1"; }, "cmake_options.BAD-NAME", "letters, digits and _");
  refused([](json &r) { r["cmake_options"]["X;Y"] = "1"; }, "cmake_options.X;Y", "letters, digits and _");
  refused([](json &r) { r["cmake_options"]["CMAKE_BUILD_TYPE"] = "Debug"; }, "cmake_options.CMAKE_BUILD_TYPE", "kiln sets itself");
  refused([](json &r) { r["cmake_options"]["KILN_GEN_DIR"] = "/tmp"; }, "cmake_options.KILN_GEN_DIR", "kiln sets itself");
  refused([](json &r) { r["cmake_options"]["CMAKE_CUDA_ARCHITECTURES"] = "90"; }, "cmake_options.CMAKE_CUDA_ARCHITECTURES",
          "kiln sets itself");
  refused([](json &r) { r["cmake_options"]["KILN_TEST_N"] = 4; }, "cmake_options.KILN_TEST_N", "must be a string");
  refused([](json &r) { r["cmake_options"]["KILN_TEST_N"] = "4\nFOO:STRING=1"; }, "cmake_options.KILN_TEST_N", "one line");
  refused([](json &r) { r.erase("target"); }, "target", "is missing");
  refused([](json &r) { r["target"] = "a b"; }, "target", "name the CMake target");
  refused([](json &r) { r.erase("output"); }, "output", "is missing");
  refused([](json &r) { r["output"] = "../libx.so"; }, "output", "relative to the CMake build directory");
  refused([](json &r) { r["output"] = "/tmp/libx.so"; }, "output", "relative to the CMake build directory");
  refused([](json &r) { r["artifact"] = "plugin.dll"; }, "artifact", "name the shared object");
  refused([](json &r) { r["sources"] = {"../module/plugin.cpp"}; }, "sources", "CMakeLists.txt");
  refused([](json &r) { r["flags"] = {"-O3"}; }, "flags", "cmake_options");
  refused([](json &r) {  // the first cmake field, in the order JSON objects are read (sorted)
    r["backend"] = "nvcc";
    r["sources"] = {"../module/plugin.cpp"};
  }, "cmake_options", "\"backend\": \"cmake\" recipes");
  refused([](json &r) { r["backend"] = "make"; }, "backend", "\"cmake\"");

  SUBCASE("a project that does not exist is NotFoundError naming it") {
    json recipe = json::parse(read_text(fx.recipe_file()));
    recipe["project"] = "../no-such-module";
    CHECK_THROWS_WITH_AS(Recipe::parse(recipe.dump(), fx.recipes().string(), "bad.json"),
                         doctest::Contains("no-such-module"), NotFoundError);
  }
  SUBCASE("the globs expand to sorted names relative to the project, each once") {
    const Recipe recipe = fx.recipe();
    CHECK(recipe.project == fx.module().string());
    CHECK(recipe.cmake_options.at("KILN_TEST_N") == "4");
  }
}

TEST_CASE("cmake keys: the input key follows project files, options, generator inputs and cmake; nothing else" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  CmakeProjectDir fx;
  Runtime runtime(fx.options());
  const auto key = [&](const std::string &file = "recipe-N4.json") { return runtime.plan(fx.recipe(file)).input_key; };
  const BuildPlan plan = runtime.plan(fx.recipe());
  CHECK(plan.state == "missing");
  CHECK(plan.backend == "cmake");
  CHECK(plan.cmake == fs::canonical(fx.recipes() / "cmake-wrapper.sh").string());
  CHECK(contains(plan.cmake_version, "cmake version"));
  CHECK_FALSE(plan.nvcc.empty());
  CHECK(contains(plan.steps.at(1), "-DKILN_TEST_N=4"));
  CHECK(contains(plan.steps.at(1), "-DCMAKE_CUDA_ARCHITECTURES=90-real"));
  const std::string base = plan.input_key;
  CHECK(fx.take_cmake_runs().all == 1);  // cmake --version, once
  CHECK(key() == base);
  CHECK(fx.take_cmake_runs().all == 0);

  SUBCASE("touched, an unmatched file edited, another memory bound: the same key") {
    fs::last_write_time(fx.module() / "plugin.cpp", fs::last_write_time(fx.module() / "plugin.cpp") + 5);
    write_text(fx.module() / "README.txt", "edited\n");
    CHECK(key() == base);
    fx.variant("memory.json", [](json &r) { r["unit_memory_mb"] = 8192; });
    CHECK(key("memory.json") == base);
  }
  SUBCASE("a project file edited (and back)") {
    const std::string text = read_text(fx.module() / "plugin.cpp");
    write_text(fx.module() / "plugin.cpp", text + "// edited\n");
    CHECK(key() != base);
    write_text(fx.module() / "plugin.cpp", text);
    CHECK(key() == base);
  }
  SUBCASE("a file outside the project matched by ../common/*.hpp, and a new file matching *.cpp") {
    write_text(fx.dir() / "src" / "common" / "common.hpp", "#pragma once\n#define COMMON_BASE 50.0\n");
    const std::string edited = key();
    CHECK(edited != base);
    write_text(fx.module() / "extra.cpp", "// new\n");
    CHECK(key() != edited);
  }
  SUBCASE("an option changed or added") {
    fx.variant("n5.json", [](json &r) { r["cmake_options"]["KILN_TEST_N"] = "5"; });
    fx.variant("more.json", [](json &r) { r["cmake_options"]["KILN_TEST_MORE"] = "1"; });
    CHECK(key("n5.json") != base);
    CHECK(key("more.json") != base);
    CHECK(key("more.json") != key("n5.json"));
  }
  SUBCASE("a generator input changed") {
    write_text(fx.recipes() / "values.txt", "5\n");
    CHECK(key() != base);
  }
  SUBCASE("another cmake (by its version), and a wrapper of the same version elsewhere") {
    const fs::path other = fx.dir() / "cmake-9.sh";
    write_text(other, "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'cmake version 9.9.9'; exit 0; fi\nexec cmake \"$@\"\n");
    fs::permissions(other, fs::owner_all);
    ScopedEnv cmake("KILN_CMAKE", other.string());
    const BuildPlan other_plan = runtime.plan(fx.recipe());
    CHECK(other_plan.cmake_version == "cmake version 9.9.9");
    CHECK(other_plan.input_key != base);
  }
}

TEST_CASE("cmake build: built and loaded; unchanged is a hit spawning nothing; N variants generate once, from checked outputs" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  CmakeProjectDir fx;
  const std::string echo = "a;b c 'q' \"dq\" $(touch pwned) `touch pwned2` {abi}";
  const Recipe n4 = fx.variant("recipe-N4.json", [&](json &r) { r["cmake_options"]["KILN_TEST_ECHO"] = echo; });
  Runtime runtime(fx.options());
  const BuildResult first = runtime.build(n4);
  CHECK(first.outcome == BuildResult::Outcome::built);
  CHECK(fx.answer(runtime, "plugin-N4") == doctest::Approx(7.0 + 4.0 + 3.0 + 100.0));
  auto runs = fx.take_cmake_runs();
  CHECK(runs.configures == 1);
  CHECK(runs.builds == 1);
  CHECK(fx.generator_runs() == 1);

  const fs::path entry = first.entry_dir;
  const std::string log = read_text(entry / "build.log");
  CHECK(contains(log, "-DKILN_TEST_N=4"));
  CHECK(contains(log, "--target kiln_test_cmake --parallel"));
  CHECK(fs::exists(entry / "libkiln_test_cmake_N4.so"));
  CHECK(fs::exists(entry / "gen" / "gen_values.h"));
  CHECK_FALSE(fs::exists(entry / "cmake-build"));  // scratch stays out of the entry
  // The option reached CMake as one argv element, verbatim: no shell ran, ';' stayed a list.
  std::string expected = echo;
  expected.replace(expected.find("{abi}"), 5, builder::abi_headers_for(fs::canonical(fx.cache())).dir);
  CHECK(read_text(entry / "gen" / "echo.txt") == expected);
  CHECK_FALSE(fs::exists(fx.module() / "pwned"));
  CHECK_FALSE(fs::exists(fx.recipes() / "pwned"));
  CHECK_FALSE(fs::exists(fs::current_path() / "pwned"));
  const auto identity = json::parse(read_text(entry / "identity.json"));
  CHECK(contains(identity["provenance"]["cmake_version"].get<std::string>(), "cmake version"));
  CHECK(identity["provenance"]["input:option KILN_TEST_N"] == "4");

  // Unchanged: a hit without a process -- in this process, after forgetting the toolchain memo
  // (as a fresh process would: the cache file remembers it), and through ensure.
  CHECK(runtime.build(n4).outcome == BuildResult::Outcome::hit);
  builder::reset_toolchain_memo_for_tests();
  CHECK(Runtime(fx.options()).build(n4).outcome == BuildResult::Outcome::hit);
  CHECK(runtime.ensure(n4).report().resolution.content_key == first.content_key);
  CHECK(fx.take_cmake_runs().all == 0);
  CHECK(fx.generator_runs() == 1);

  // N=8 shares the generator step: its output comes from the object cache.
  const BuildResult n8 = runtime.build(n_variant(fx, 8));
  CHECK(n8.outcome == BuildResult::Outcome::built);
  CHECK(n8.content_key != first.content_key);
  CHECK(fx.answer(runtime, "plugin-N8") == doctest::Approx(7.0 + 8.0 + 3.0 + 100.0));
  CHECK(fx.generator_runs() == 1);
  CHECK(fx.take_cmake_runs().configures == 1);

  // A cached output that no longer has its recorded digest is never used: the step runs again.
  int damaged = 0;
  for (fs::directory_iterator it(fx.cache() / "consumers" / "cmake-tests" / "objects"), end; it != end; ++it) {
    const std::string name = it->path().filename().string();
    if (name.rfind("gen-", 0) == 0 && contains(name, "-gen_values.h")) {
      write_text(it->path(), "#pragma once\n#define GEN_VALUE 1000\n");
      ++damaged;
    }
  }
  CHECK(damaged == 1);
  CHECK(runtime.build(n_variant(fx, 16)).outcome == BuildResult::Outcome::built);
  CHECK(fx.answer(runtime, "plugin-N16") == doctest::Approx(7.0 + 16.0 + 3.0 + 100.0));
  CHECK(fx.generator_runs() == 2);
  fx.take_cmake_runs();

  // A generator input changed but its output did not: the entry is reused, no cmake runs.
  write_text(fx.recipes() / "values.txt", "3\nnot read by the generator\n");
  const BuildResult same = runtime.build(n4);
  CHECK(same.outcome == BuildResult::Outcome::reused);
  CHECK(same.content_key == first.content_key);
  CHECK(fx.generator_runs() == 3);
  CHECK(fx.take_cmake_runs().all == 0);
  // Its output changed: rebuilt with the new header.
  write_text(fx.recipes() / "values.txt", "5\n");
  const BuildResult changed = runtime.build(n4);
  CHECK(changed.outcome == BuildResult::Outcome::built);
  CHECK(fx.answer(runtime, "plugin-N4") == doctest::Approx(7.0 + 4.0 + 5.0 + 100.0));
  CHECK(fx.take_cmake_runs().configures == 1);
}

TEST_CASE("cmake build: two builders of one missing key at once configure and build once" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  CmakeProjectDir fx;
  const Recipe recipe = fx.recipe();
  std::vector<BuildResult> results(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      try {
        results[i] = Runtime(fx.options()).build(recipe);
      } catch (const std::exception &error) {
        errors[i] = error.what();
      }
    });
  }
  for (auto &thread : threads) thread.join();
  CHECK(errors[0].empty());
  CHECK(errors[1].empty());
  CHECK(results[0].content_key == results[1].content_key);
  const int built = (results[0].outcome == BuildResult::Outcome::built) + (results[1].outcome == BuildResult::Outcome::built);
  CHECK(built == 1);
  const auto runs = fx.take_cmake_runs();
  CHECK(runs.configures == 1);
  CHECK(runs.builds == 1);
  CHECK(fx.generator_runs() == 1);
}

}  // TEST_SUITE
