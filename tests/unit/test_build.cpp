// Build on miss with the real nvcc (through a counting wrapper): keys, object cache, hits,
// failures, crashes and many processes asking at once.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <set>
#include <thread>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/ext/example.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/toolchain.hpp"
#include "support/build_recipe.hpp"
#include "support/fixtures.hpp"

using namespace kiln;
using kiln::test::read_text;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;

namespace {

struct Counts {
  int compiles = 0;
  int links = 0;
};

class BuildFixture {
 public:
  BuildFixture()
      : nvcc_(std::string("KILN_NVCC"), (dir_ / "src" / "nvcc-wrapper.sh").string()),
        log_(std::string("KILN_TEST_NVCC_LOG"), (dir_ / "nvcc.log").string()),
        delay_(std::string("KILN_TEST_NVCC_DELAY"), std::nullopt) {
    fs::create_directories(src());
    for (fs::directory_iterator it(fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "data" / "build"), end; it != end; ++it) {
      fs::copy_file(it->path(), src() / it->path().filename());
    }
    builder::reset_toolchain_memo_for_tests();
  }

  fs::path src() const { return dir_ / "src"; }
  fs::path cache() const { return dir_ / "cache"; }
  fs::path recipe_file() const { return src() / "recipe.json"; }
  Recipe recipe() const { return Recipe::load(recipe_file().string()); }
  const TempDir &dir() const { return dir_; }

  RuntimeOptions options() const {
    RuntimeOptions options;
    options.cache_dir = cache().string();
    options.declared_device = "sm_90";
    return options;
  }

  // nvcc calls since the last take (the toolchain's --version probe is not a compile).
  Counts take() {
    Counts counts;
    std::istringstream lines(read_text(dir_ / "nvcc.log"));
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("-c ", 0) == 0) ++counts.compiles;
      if (line.rfind("--shared", 0) == 0) ++counts.links;
    }
    write_text(dir_ / "nvcc.log", "");
    return counts;
  }

  std::map<std::string, std::string> cli_env() const {
    return {{"KILN_CACHE_DIR", cache().string()},
            {"KILN_DEVICE", "sm_90"},
            {"KILN_NVCC", (src() / "nvcc-wrapper.sh").string()},
            {"KILN_TEST_NVCC_LOG", (dir_ / "nvcc.log").string()}};
  }

 private:
  TempDir dir_;
  ScopedEnv nvcc_, log_, delay_;
};

void set_mtime_later(const fs::path &file) {
  const std::time_t now = fs::last_write_time(file);
  fs::last_write_time(file, now + 5);
}

int entries_in(const fs::path &cache) {
  int count = 0;
  const fs::path store = cache / "consumers" / "build-tests" / "store";
  if (!fs::exists(store)) return 0;
  for (fs::directory_iterator it(store), end; it != end; ++it) ++count;
  return count;
}

}  // namespace

TEST_CASE("build: first build compiles each unit once and links; the result loads and sees every input") {
  BuildFixture fx;
  Runtime runtime(fx.options());
  const BuildResult first = runtime.build(fx.recipe());
  CHECK(first.outcome == BuildResult::Outcome::built);
  Counts counts = fx.take();
  CHECK(counts.compiles == 2);
  CHECK(counts.links == 1);
  CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(7.0 + 3.0 + 200.0));
  const fs::path entry = first.entry_dir;
  CHECK(fs::exists(entry / "build.log"));
  CHECK(fs::exists(entry / "gen" / "gen_values.h"));  // generated headers stay with the entry
  CHECK(read_text(entry / "build.log").find("nvcc") != std::string::npos);
  const auto identity = nlohmann::json::parse(read_text(entry / "identity.json"));
  CHECK(identity["provenance"]["input_key"] == first.input_key);
  CHECK(identity["archs"][0] == "sm_90");

  SUBCASE("unchanged: a hit, no nvcc at all") {
    const BuildResult again = runtime.build(fx.recipe());
    CHECK(again.outcome == BuildResult::Outcome::hit);
    CHECK(again.content_key == first.content_key);
    counts = fx.take();
    CHECK(counts.compiles == 0);
    CHECK(counts.links == 0);
    CHECK(read_text(fx.dir() / "nvcc.log").empty());  // not even nvcc --version: identity remembered
  }
  SUBCASE("touched but same bytes: still a hit") {
    set_mtime_later(fx.src() / "plugin.cu");
    set_mtime_later(fx.src() / "common.h");
    CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::hit);
    CHECK(fx.take().compiles == 0);
  }
  SUBCASE("one unit edited: exactly one compile and the link") {
    write_text(fx.src() / "helper.cpp", read_text(fx.src() / "helper.cpp") + "\n// edited\n");
    CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::built);
    counts = fx.take();
    CHECK(counts.compiles == 1);
    CHECK(counts.links == 1);
  }
  SUBCASE("a declared header edited: every unit recompiles (headers key all units as one set)") {
    write_text(fx.src() / "common.h", "#pragma once\n#define COMMON_BASE 50.0\n");
    runtime.build(fx.recipe());
    counts = fx.take();
    CHECK(counts.compiles == 2);
    CHECK(counts.links == 1);
    CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(7.0 + 3.0 + 100.0));
  }
  SUBCASE("a define changed: rebuilt, new answer") {
    std::string text = read_text(fx.recipe_file());
    text.replace(text.find("SCALE=2"), 7, "SCALE=4");
    write_text(fx.recipe_file(), text);
    const BuildResult rebuilt = runtime.build(fx.recipe());
    CHECK(rebuilt.content_key != first.content_key);
    CHECK(fx.take().compiles == 2);
    CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(7.0 + 3.0 + 400.0));
  }
  SUBCASE("a generator input changed: regenerated and recompiled") {
    write_text(fx.src() / "values.txt", "5\n");
    runtime.build(fx.recipe());
    CHECK(fx.take().compiles == 2);
    CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(7.0 + 5.0 + 200.0));
  }
  SUBCASE("inputs changed but the compiler sees the same bytes: the entry is reused, nothing compiles") {
    write_text(fx.src() / "values.txt", "3\nthis line is not read by the generator\n");
    const BuildResult reused = runtime.build(fx.recipe());
    CHECK(reused.outcome == BuildResult::Outcome::reused);
    CHECK(reused.input_key != first.input_key);
    CHECK(reused.content_key == first.content_key);
    CHECK(fx.take().compiles == 0);
  }
  SUBCASE("--force recompiles every unit") {
    BuildOptions force;
    force.force = true;
    runtime.build(fx.recipe(), force);
    counts = fx.take();
    CHECK(counts.compiles == 2);
    CHECK(counts.links == 1);
  }
  SUBCASE("another arch list is another build") {
    BuildOptions sm87;
    sm87.archs = {Arch::parse("sm_87")};
    const BuildResult other = runtime.build(fx.recipe(), sm87);
    CHECK(other.content_key != first.content_key);
    CHECK(fx.take().compiles == 2);
  }
}

TEST_CASE("build: plan has no side effect and reports the state") {
  BuildFixture fx;
  Runtime runtime(fx.options());
  const BuildPlan before = runtime.plan(fx.recipe());
  CHECK(before.state == "missing");
  CHECK_FALSE(before.content_key);
  CHECK(before.input_key.size() == 32);
  CHECK_FALSE(fs::exists(fx.cache()));  // nothing written, not even the toolchain memo
  CHECK(fx.take().compiles == 0);
  const BuildResult built = runtime.build(fx.recipe());
  const BuildPlan after = runtime.plan(fx.recipe());
  CHECK(after.state == "cached");
  CHECK(after.input_key == built.input_key);
  REQUIRE(after.content_key);
  CHECK(*after.content_key == built.content_key);
}

TEST_CASE("build: a compile error is a BuildError carrying the log; nothing is published; a fix builds") {
  BuildFixture fx;
  Runtime runtime(fx.options());
  write_text(fx.src() / "helper.cpp", "#include \"common.h\"\ndouble helper_value() { return undefined_symbol_here; }\n");
  try {
    runtime.build(fx.recipe());
    FAIL("a broken unit built");
  } catch (const BuildError &error) {
    CHECK(std::string(error.what()).find("helper.cpp") != std::string::npos);
    CHECK(error.log().find("undefined_symbol_here") != std::string::npos);
  }
  CHECK(entries_in(fx.cache()) == 0);  // no entry and no staging left behind
  CHECK_THROWS_AS(runtime.resolve("build-tests", "two-units"), NotFoundError);
  write_text(fx.src() / "helper.cpp", "#include \"common.h\"\ndouble helper_value() { return COMMON_BASE * SCALE; }\n");
  CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::built);
  CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(210.0));
}

TEST_CASE("build: 8 processes asking for one missing artifact cause exactly one compile per unit") {
  BuildFixture fx;
  const auto env = fx.cli_env();
  std::string command = "env";
  for (const auto &[name, value] : env) command += " '" + name + "=" + value + "'";
  command += " '" KILN_CLI_PATH "' build --json '" + fx.recipe_file().string() + "'";
  std::string script = "pids=''; for i in 1 2 3 4 5 6 7 8; do " + command + " > " + (fx.dir() / "out").string() +
                       ".$i 2>" + (fx.dir() / "err").string() + ".$i & pids=\"$pids $!\"; done; rc=0; for p in $pids; do wait $p || rc=1; done; exit $rc";
  const auto result = kiln::test::run_shell("sh -c '" + [&] {
    std::string escaped;
    for (char c : script) escaped += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return escaped;
  }() + "'");
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  const Counts counts = fx.take();
  CHECK(counts.compiles == 2);
  CHECK(counts.links == 1);
  std::set<std::string> keys;
  for (int i = 1; i <= 8; ++i) {
    const auto out = nlohmann::json::parse(read_text(fx.dir() / ("out." + std::to_string(i))));
    keys.insert(out["content_key"].get<std::string>());
  }
  CHECK(keys.size() == 1);
  Runtime runtime(fx.options());
  CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(210.0));
}

TEST_CASE("build: a build SIGKILLed midway leaves only staging; the next build succeeds and the store verifies") {
  BuildFixture fx;
  auto env = fx.cli_env();
  env["KILN_TEST_NVCC_DELAY"] = "3";
  std::string command = "env";
  for (const auto &[name, value] : env) command += " '" + name + "=" + value + "'";
  command += " '" KILN_CLI_PATH "' build '" + fx.recipe_file().string() + "' >/dev/null 2>&1";
  const pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
    ::_exit(127);
  }
  // Wait until nvcc runs (the wrapper logs before sleeping), then kill the whole build.
  for (int i = 0; i < 200 && fx.take().compiles == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(-child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK_THROWS_AS(Runtime(fx.options()).resolve("build-tests", "two-units"), NotFoundError);
  Runtime runtime(fx.options());
  CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::built);
  CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(210.0));
  CHECK(entries_in(fx.cache()) == 1);  // the dead build's staging directory was swept
}

TEST_CASE("build: SIGINT stops the build, kills nvcc and publishes nothing") {
  BuildFixture fx;
  auto env = fx.cli_env();
  env["KILN_TEST_NVCC_DELAY"] = "30";
  std::string command = "exec env";
  for (const auto &[name, value] : env) command += " '" + name + "=" + value + "'";
  command += " '" KILN_CLI_PATH "' build '" + fx.recipe_file().string() + "' >/dev/null 2>&1";
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 200 && fx.take().compiles == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto start = std::chrono::steady_clock::now();
  ::kill(child, SIGINT);
  int status = 0;
  ::waitpid(child, &status, 0);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(waited < 10.0);  // did not wait out the 30 s compile
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) != 0));
  CHECK(entries_in(fx.cache()) == 0);
  // "[p]" keeps the pattern from matching the shell that runs pgrep.
  const auto survivors = kiln::test::run_shell("pgrep -f '" + fx.src().string() + "/[p]lugin.cu'");
  CHECK(survivors.out.empty());
}

TEST_CASE("build: recipes are validated with the field and the fix named") {
  TempDir dir;
  write_text(dir / "a.cu", "");
  write_text(dir / "b.cpp", "");
  write_text(dir / "sub.cu", "");
  fs::create_directories(dir / "x");
  write_text(dir / "x" / "a.cpp", "");
  const auto message = [&](const std::string &recipe_text) -> std::string {
    try {
      Recipe::parse(recipe_text, dir.path().string(), "test.json");
    } catch (const Error &error) {
      return error.what();
    }
    return "";
  };
  const std::string base = R"("schema":1,"consumer":"c","name":"n","archs":["sm_90"],"artifact":"libx.so")";
  CHECK(message("{" + base + R"(,"sources":["a.cu"]})").empty());
  CHECK(message("{" + base + R"(,"sources":["a.cu","x/a.cpp"]})").find("two sources named a") != std::string::npos);
  CHECK(message("{" + base + R"(,"sources":["a.cu"],"defines":["1BAD"]})").find("NAME=VALUE") != std::string::npos);
  CHECK(message("{" + base + R"(,"sources":["a.cu"],"sourcs":[]})").find("\"sourcs\" is not a recipe field") != std::string::npos);
  CHECK(message("{" + base + R"(,"sources":["missing.cu"]})").find("does not exist") != std::string::npos);
  CHECK(message("{" + base + R"(,"sources":["a.cu"],"flags":["-o"]})").find("kiln sets itself") != std::string::npos);
  CHECK(message(R"({"schema":1,"consumer":"../x","name":"n","archs":["sm_90"],"artifact":"l.so","sources":["a.cu"]})")
            .find("consumer") != std::string::npos);
  CHECK(message("{" + base + R"(,"sources":["a.cu"],"generators":[{"name":"g","command":["x"],"outputs":["o.h"]}]})")
            .find("tool") != std::string::npos);
  CHECK(message(R"({"schema":2})").find("schema") != std::string::npos);
  CHECK(message("{" + base + R"(,"sources":["a.cu"],"archs":["sm_61"]})").find("archs") != std::string::npos);
}

TEST_CASE("build: no toolchain is a clear error; ensure then loads a prepared artifact") {
  BuildFixture fx;
  {
    Runtime runtime(fx.options());
    runtime.build(fx.recipe());  // prepared while nvcc was there
  }
  ScopedEnv no_nvcc("KILN_NVCC", std::nullopt);
  ScopedEnv no_home("CUDA_HOME", std::string("/nonexistent"));
  ScopedEnv no_path("CUDA_PATH", std::nullopt);
  ScopedEnv path("PATH", std::string("/usr/bin:/bin"));
  ScopedEnv fallback("KILN_CUDA_FALLBACK_DIR", std::string("/nonexistent"));
  builder::reset_toolchain_memo_for_tests();
  // Another recipe name: nothing prepared for it.
  std::string text = read_text(fx.recipe_file());
  text.replace(text.find("\"two-units\""), 11, "\"unprepared\"");
  write_text(fx.src() / "other.json", text);
  Runtime runtime(fx.options());
  try {
    runtime.build(Recipe::load((fx.src() / "other.json").string()));
    FAIL("built without nvcc");
  } catch (const NotFoundError &error) {
    CHECK_MESSAGE(std::string(error.what()).find("prepared artifact") != std::string::npos, std::string(error.what()));
  }
  Module module = runtime.ensure(fx.recipe());
  CHECK(module.report().resolution.name == "two-units");
}

TEST_SUITE("gpu") {
  TEST_CASE("gpu: ensure builds a recipe with a kernel for the live device, runs it; a new process hits") {
    TempDir dir;
    const std::string recipe_text = std::string(R"({"schema": 1, "consumer": "gpu-tests", "name": "saxpy",
      "sources": [")") + KILN_TEST_SOURCE_DIR + R"(/tests/plugins/example.cu"], "archs": ["native"],
      "artifact": "libsaxpy.so", "flags": ["-O3"]})";
    write_text(dir / "recipe.json", recipe_text);
    RuntimeOptions options;
    options.cache_dir = (dir / "cache").string();
    Runtime runtime(options);
    Module module = runtime.ensure(Recipe::load((dir / "recipe.json").string()));
    REQUIRE(module.report().device);
    CHECK(module.report().compatibility.image->to_string() == module.report().device->arch_name());
    Instance instance = module.create_instance();
    const std::uint32_t n = 4096;
    instance.activate(0, n);
    const auto *example = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
    REQUIRE(example != nullptr);
    std::vector<float> x(n), y(n, 1.0f);
    for (std::uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
    char message[512] = "";
    REQUIRE_MESSAGE(example->saxpy(instance.handle(), 2.0f, x.data(), y.data(), n, message, sizeof message) == KILN_OK,
                    std::string(message));
    int wrong = 0;
    for (std::uint32_t i = 0; i < n; ++i) wrong += y[i] != 2.0f * static_cast<float>(i) + 1.0f;
    CHECK(wrong == 0);
    CHECK(example->last_device_arch(instance.handle()) == module.report().device->cc_major * 10 +
                                                           module.report().device->cc_minor);

    const auto again = kiln::test::run_kiln({"build", "--json", (dir / "recipe.json").string()},
                                            {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_DEVICE", ""}});
    REQUIRE_MESSAGE(again.exit_code == 0, again.err);
    CHECK(nlohmann::json::parse(again.out)["outcome"] == "hit");
  }
}
