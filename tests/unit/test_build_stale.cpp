// plan names what changed since consumer/name was built: the entry the manifest names is
// compared field by field with the current inputs ("stale" with reasons, not "missing").
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/toolchain.hpp"
#include "files/digest.hpp"
#include "support/build_recipe.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/checks.hpp"

using namespace kiln;
using kiln::test::BuildRecipeDir;
using kiln::test::read_text;
using kiln::test::ScopedEnv;
using kiln::test::write_text;
using nlohmann::json;

namespace {

using kiln::test::contains;

std::string reasons_text(const BuildPlan &plan) {
  std::string text;
  for (const auto &reason : plan.stale_reasons) text += reason.to_string() + "\n";
  return text;
}

}  // namespace

TEST_CASE("plan: an edited source makes consumer/name stale and names the source with both digests" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  Runtime runtime(fx.options());
  const BuildResult built = runtime.build(fx.recipe());
  CHECK(runtime.plan(fx.recipe()).state == "cached");
  const std::string before = files::digest_file(fx.src() / "helper.cpp");
  fx.edit("helper.cpp", "COMMON_BASE * SCALE", "COMMON_BASE * SCALE + 1.0");
  const std::string after = files::digest_file(fx.src() / "helper.cpp");

  const BuildPlan plan = runtime.plan(fx.recipe());
  CAPTURE(reasons_text(plan));
  CHECK(plan.state == "stale");
  CHECK(plan.input_key != built.input_key);
  REQUIRE(plan.stale_reasons.size() == 1);  // only that file: plugin.cu, the defines, nvcc are as recorded
  CHECK(plan.stale_reasons[0].field == "source helper.cpp");
  CHECK(plan.stale_reasons[0].recorded == before);
  CHECK(plan.stale_reasons[0].current == after);
  CHECK(plan.stale_reasons[0].to_string() == "source helper.cpp: recorded " + before + ", current " + after);

  // The build that follows says the same in its log, then the plan is current again.
  std::vector<std::string> logs;
  Runtime logged(fx.options([&](LogLevel, const std::string &message) { logs.push_back(message); }));
  logged.build(fx.recipe());
  bool said = false;
  for (const auto &line : logs) said = said || contains(line, "rebuilding build-tests/two-units: source helper.cpp: recorded " + before);
  CHECK(said);
  CHECK(runtime.plan(fx.recipe()).state == "cached");
}

TEST_CASE("plan: a changed define is named with both values; a header edit names the header" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  Runtime runtime(fx.options());
  runtime.build(fx.recipe());
  SUBCASE("define") {
    fx.edit("recipe.json", "SCALE=2", "SCALE=4");
    const BuildPlan plan = runtime.plan(fx.recipe());
    CAPTURE(reasons_text(plan));
    CHECK(plan.state == "stale");
    REQUIRE(plan.stale_reasons.size() == 1);
    CHECK(plan.stale_reasons[0].to_string() == "define SCALE: recorded 2, current 4");
  }
  SUBCASE("a define added") {
    fx.edit("recipe.json", "\"SCALE=2\"", "\"SCALE=2\", \"EXTRA\"");
    const BuildPlan plan = runtime.plan(fx.recipe());
    CAPTURE(reasons_text(plan));
    REQUIRE(plan.stale_reasons.size() == 1);
    CHECK(plan.stale_reasons[0].to_string() == "define EXTRA: recorded (none), current (set)");
  }
  SUBCASE("flags") {
    fx.edit("recipe.json", "\"-O2\"", "\"-O3\"");
    const BuildPlan plan = runtime.plan(fx.recipe());
    CAPTURE(reasons_text(plan));
    REQUIRE(plan.stale_reasons.size() == 1);
    CHECK(plan.stale_reasons[0].to_string() == "recipe flags: recorded [\"-O2\"], current [\"-O3\"]");
  }
  SUBCASE("header") {
    write_text(fx.src() / "common.h", read_text(fx.src() / "common.h") + "\n// edited\n");
    const BuildPlan plan = runtime.plan(fx.recipe());
    CAPTURE(reasons_text(plan));
    REQUIRE(plan.stale_reasons.size() == 1);
    CHECK(plan.stale_reasons[0].field == "header common.h");
  }
}

TEST_CASE("plan: another nvcc version is named by its release" * kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  Runtime runtime(fx.options());
  runtime.build(fx.recipe());
  const std::string real = builder::find_nvcc();
  const auto newer = fx.script("newer-nvcc", "if [ \"$1\" = --version ]; then\n"
                                             "  echo 'Cuda compilation tools, release 13.9, V13.9.99'\n"
                                             "  echo 'Build cuda_13.9.r13.9/compiler.99_0'\n"
                                             "  exit 0\nfi\nexec '" + real + "' \"$@\"\n");
  ScopedEnv nvcc("KILN_NVCC", newer.string());
  builder::reset_toolchain_memo_for_tests();
  const BuildPlan plan = runtime.plan(fx.recipe());
  CAPTURE(reasons_text(plan));
  CHECK(plan.state == "stale");
  REQUIRE(plan.stale_reasons.size() == 1);
  CHECK(plan.stale_reasons[0].field == "nvcc");
  CHECK(std::regex_match(plan.stale_reasons[0].recorded, std::regex(R"(\d+\.\d+\.\d+)")));
  CHECK(plan.stale_reasons[0].current == "13.9.99");
  builder::reset_toolchain_memo_for_tests();
}

TEST_CASE("plan: an entry that recorded no inputs one by one (an older kiln's) is still stale, with a reason" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  Runtime runtime(fx.options());
  const BuildResult built = runtime.build(fx.recipe());
  const boost::filesystem::path identity_file = boost::filesystem::path(built.entry_dir) / "identity.json";
  json identity = json::parse(read_text(identity_file));
  for (auto it = identity["provenance"].begin(); it != identity["provenance"].end();) {
    it = it.key().rfind("input:", 0) == 0 || it.key().rfind("toolchain:", 0) == 0 ? identity["provenance"].erase(it)
                                                                                   : std::next(it);
  }
  boost::filesystem::permissions(identity_file, boost::filesystem::owner_read | boost::filesystem::owner_write);
  write_text(identity_file, identity.dump(2));
  fx.edit("helper.cpp", "COMMON_BASE * SCALE", "COMMON_BASE * SCALE + 1.0");
  const BuildPlan plan = runtime.plan(fx.recipe());
  CAPTURE(reasons_text(plan));
  CHECK(plan.state == "stale");
  REQUIRE(plan.stale_reasons.size() == 1);
  CHECK(plan.stale_reasons[0].field == "inputs");
  CHECK(plan.stale_reasons[0].recorded == built.input_key);
  CHECK(plan.stale_reasons[0].current == plan.input_key);
}

TEST_CASE("kiln build --plan prints the stale reasons, in text and --json" * kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  auto result = kiln::test::run_kiln({"build", fx.recipe_file().string()}, fx.cli_env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  fx.edit("recipe.json", "SCALE=2", "SCALE=64");
  result = kiln::test::run_kiln({"build", "--plan", fx.recipe_file().string()}, fx.cli_env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.out, "build-tests/two-units: stale"));
  CHECK(contains(result.out, "  stale: define SCALE: recorded 2, current 64\n"));
  result = kiln::test::run_kiln({"build", "--plan", "--json", fx.recipe_file().string()}, fx.cli_env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json out = json::parse(result.out);
  CHECK(out["state"] == "stale");
  REQUIRE(out["stale_reasons"].size() == 1);
  CHECK(out["stale_reasons"][0]["field"] == "define SCALE");
  CHECK(out["stale_reasons"][0]["recorded"] == "2");
  CHECK(out["stale_reasons"][0]["current"] == "64");
}
