// The cmake backend when things go wrong: each failing step is a typed error naming the recipe,
// the step and the log's tail, with nothing published; no cmake means the prepared artifact
// loads (and only then); cancelling or killing the host leaves no cmake, make or step running.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/cancel.hpp>
#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/toolchain.hpp"
#include "support/cmake_project.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/checks.hpp"
#include "support/processes.hpp"

using namespace kiln;
using kiln::test::CmakeProjectDir;
using kiln::test::eventually;
using kiln::test::read_text;
using kiln::test::ScopedEnv;
using kiln::test::store_dirs;
using nlohmann::json;
namespace fs = boost::filesystem;
using std::chrono::milliseconds;

namespace {

using kiln::test::contains;

// The recipe building the never-ending kiln_test_slow target.
Recipe slow_recipe(const CmakeProjectDir &fx) {
  return fx.variant("slow.json", [](json &r) {
    r["name"] = "slow";
    r["target"] = "kiln_test_slow";
  });
}

// The processes running the slow step -- slow.sh's grandchild, slow.sh, and its ancestors below
// `top` (make, cmake) -- once slow.sh has recorded itself; empty when `gave_up` says the build
// ended first, or after 60 s.
template <typename GaveUp>
std::vector<kiln::test::Seen> slow_step(const CmakeProjectDir &fx, pid_t top, GaveUp gave_up) {
  const fs::path child = fx.pids() / "child", grandchild = fx.pids() / "grandchild";
  eventually([&] { return (fs::exists(child) && fs::exists(grandchild)) || gave_up(); }, milliseconds(60000));
  if (!fs::exists(child) || !fs::exists(grandchild)) return {};
  std::vector<kiln::test::Seen> step = kiln::test::lineage(std::stoi(read_text(child)), top);
  step.push_back(kiln::test::seen(std::stoi(read_text(grandchild))));
  return step;
}

std::string names_of(const std::vector<kiln::test::Seen> &step) {
  std::string names;
  for (const auto &seen : step) names += kiln::test::command_name(seen.pid) + " ";
  return names;
}

bool any_running(const std::vector<kiln::test::Seen> &step) {
  for (const auto &seen : step) {
    if (kiln::test::running(seen)) return true;
  }
  return false;
}

}  // namespace

TEST_SUITE("cmake_backend") {

TEST_CASE("cmake build: configure, build, output and plugin failures are BuildErrors naming recipe, step and log; "
          "nothing is published" * kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  CmakeProjectDir fx;
  Runtime runtime(fx.options());
  struct Failure {
    std::string name;
    std::function<void(json &)> edit;
    std::vector<std::string> said;
  };
  const std::vector<Failure> failures = {
      {"configure", [](json &r) { r["cmake_options"]["KILN_TEST_FAIL"] = "configure"; },
       {"cmake configure of cmake-tests/", "exit code", "configure fails on purpose"}},
      {"build", [](json &r) { r["cmake_options"]["KILN_TEST_FAIL"] = "build"; },
       {"cmake --build --target kiln_test_cmake", "exit code", "the build fails on purpose"}},
      {"output", [](json &r) { r["target"] = "kiln_test_nothing"; },
       {"target kiln_test_nothing built, but \"output\" libkiln_test_cmake.so is not in the CMake build directory"}},
      {"plugin", [](json &r) {
         r["target"] = "kiln_test_not_plugin";
         r["output"] = "libkiln_test_not_plugin.so";
       },
       {"is not a kiln plugin", "KILN_PLUGIN"}},
  };
  for (const auto &failure : failures) {
    CAPTURE(failure.name);
    const Recipe recipe = fx.variant(failure.name + ".json", [&](json &r) {
      r["name"] = "fails-" + failure.name;
      failure.edit(r);
    });
    try {
      runtime.build(recipe);
      FAIL("the build succeeded");
    } catch (const BuildError &error) {
      const std::string what = error.what();
      CAPTURE(what);
      CHECK(contains(what, recipe.file));
      for (const auto &part : failure.said) CHECK(contains(what, part));
    }
    CHECK(store_dirs(fx.cache()) == 0);  // neither an entry nor its staging directory
    CHECK_THROWS_AS(runtime.resolve("cmake-tests", recipe.name), NotFoundError);
  }
}

TEST_CASE("cmake ensure: without cmake the prepared artifact loads; a failing configure is reported, not hidden" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  CmakeProjectDir fx;
  const std::string prepared = Runtime(fx.options()).build(fx.recipe()).content_key;
  std::vector<std::string> logs;
  const LogCallback log = [&](LogLevel, const std::string &message) { logs.push_back(message); };
  const auto logged = [&](const std::string &part) {
    for (const auto &line : logs) {
      if (contains(line, part)) return true;
    }
    return false;
  };

  // In sequence, not as subcases: each subcase would pay the prepared build again.
  {
    ScopedEnv cmake("KILN_CMAKE", std::string("/nonexistent/cmake"));  // points nowhere
    CHECK_THROWS_AS(Runtime(fx.options()).build(fx.recipe()), ToolchainMissingError);
    Runtime runtime(fx.options(log));
    CHECK(runtime.ensure(fx.recipe()).report().resolution.content_key == prepared);
    CHECK(logged("no toolchain (KILN_CMAKE=/nonexistent/cmake"));
    CHECK(logged("loading the prepared cmake-tests/plugin-N4"));
  }
  {
    ScopedEnv cmake("KILN_CMAKE", std::nullopt);  // and none on PATH
    ScopedEnv path("PATH", (fx.dir() / "empty").string());
    CHECK_THROWS_WITH_AS(Runtime(fx.options()).plan(fx.recipe()), doctest::Contains("cmake not found"),
                         ToolchainMissingError);
  }
  {
    // cmake present but the configure fails: the error, never the older artifact.
    logs.clear();
    const Recipe failing = fx.variant("recipe-N4.json", [](json &r) { r["cmake_options"]["KILN_TEST_FAIL"] = "configure"; });
    Runtime runtime(fx.options(log));
    CHECK_THROWS_AS(runtime.ensure(failing), BuildError);
    CHECK_FALSE(logged("loading the prepared"));
    CHECK(runtime.resolve("cmake-tests", "plugin-N4").content_key == prepared);
  }
  builder::reset_toolchain_memo_for_tests();
}

TEST_CASE("cmake build: cancel kills cmake, make and the step's children at once; nothing is published" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  CmakeProjectDir fx;
  Runtime runtime(fx.options());
  CancelToken cancel;
  BuildOptions options;
  options.cancel = &cancel;
  std::string error;
  std::atomic<bool> finished{false};
  const Recipe recipe = slow_recipe(fx);
  std::thread build([&] {
    try {
      runtime.build(recipe, options);
    } catch (const Error &caught) {
      error = caught.what();
    }
    finished = true;
  });
  const auto step = slow_step(fx, ::getpid(), [&] { return finished.load(); });
  const std::string names = names_of(step);
  cancel.cancel();
  build.join();
  REQUIRE_MESSAGE(!step.empty(), "the build never reached its slow step: " << error);
  CHECK_MESSAGE(contains(names, "cmake "), names);
  CHECK_MESSAGE(contains(names, "make "), names);
  CHECK_MESSAGE(contains(error, "cancelled"), error);
  CHECK(eventually([&] { return !any_running(step); }, milliseconds(3000)));
  CHECK(store_dirs(fx.cache()) == 0);
}

TEST_CASE("cmake build: a library host SIGKILLed mid-build leaves no cmake, make or step running" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  CmakeProjectDir fx;
  slow_recipe(fx);
  const std::string cache = fx.cache().string(), recipe = fx.recipe_file("slow.json").string();
  const pid_t host = ::fork();  // the environment (KILN_CMAKE, KILN_TEST_PID_DIR) goes with it
  if (host == 0) {
    ::execl(KILN_TEST_BUILD_HOST, KILN_TEST_BUILD_HOST, cache.c_str(), recipe.c_str(), static_cast<char *>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  const auto step = slow_step(fx, host, [&] { return ::waitpid(host, &status, WNOHANG) == host; });
  const std::string names = names_of(step);
  ::kill(host, SIGKILL);
  ::waitpid(host, nullptr, 0);
  REQUIRE_MESSAGE(!step.empty(), "the host never reached the slow step (exit status " << status << ")");
  CHECK_MESSAGE(contains(names, "cmake "), names);
  CHECK(eventually([&] { return !any_running(step); }, milliseconds(3000)));
}

}  // TEST_SUITE
