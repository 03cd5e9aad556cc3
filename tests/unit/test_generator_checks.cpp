// A generator step's "check" (docs/recipes.md): run by `kiln build --plan` and by a build before
// anything is built, its refusal a UsageError (exit 2) naming the recipe, the step and the tool's
// message, with nothing written to the store; absent, it leaves the recipe's input key alone.
#include <doctest/doctest.h>

#include <string>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>

#include "support/checks.hpp"
#include "support/file_counts.hpp"
#include "support/fixtures.hpp"

using kiln::Recipe;
using kiln::test::CommandResult;
using kiln::test::TempDir;
using kiln::test::contains;
using kiln::test::files_under;
using kiln::test::write_text;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

json recipe_with(const json &generator) {
  return json{{"schema", 1},          {"consumer", "checks"}, {"name", "r"},
              {"sources", {"a.cu"}}, {"archs", {"sm_90"}},   {"artifact", "libr.so"},
              {"generators", json::array({generator})}};
}

json step() {
  return json{{"name", "chain"}, {"command", {"true", "{gen}/o.h"}}, {"outputs", {"o.h"}}, {"tool_identity", "gen 1"}};
}

fs::path write_recipe(const TempDir &dir, const json &recipe) {
  write_text(dir / "a.cu", "");
  const fs::path file = dir / "r.json";
  write_text(file, recipe.dump(2));
  return file;
}

}  // namespace

// (A build runs the same check before staging: tests/robotgen/test_robot_init.cpp, where nvcc is.)
TEST_CASE("generator checks: a refusal stops plan before the store is touched") {
  TempDir dir;
  json generator = step();
  generator["check"] = {"sh", "-c", "echo 'chain l0 -> l20: 20 joints, the plugin takes at most 12' >&2; exit 3"};
  const fs::path recipe = write_recipe(dir, recipe_with(generator));
  const fs::path cache = dir / "cache";
  for (const auto &args : {std::vector<std::string>{"build", "--plan", recipe.string()},
                           std::vector<std::string>{"build", "--plan", recipe.string(), "--json"}}) {
    const CommandResult run = kiln::test::run_kiln(args, kiln::test::cli_env(cache));
    CHECK_MESSAGE(run.exit_code == 2, run.err);
    CHECK_MESSAGE(contains(run.err, recipe.string()), run.err);
    CHECK_MESSAGE(contains(run.err, "checks/r"), run.err);
    CHECK_MESSAGE(contains(run.err, "generator chain refuses it"), run.err);
    CHECK_MESSAGE(contains(run.err, "20 joints, the plugin takes at most 12"), run.err);
    CHECK_MESSAGE(files_under(cache / "consumers") == 0, "a refused recipe wrote into the store");
  }
}

TEST_CASE("generator checks: a passing check runs at plan time, in the recipe's directory, with {tool}") {
  TempDir dir;
  write_text(dir / "tool.sh", "#!/bin/sh\ntouch checked-by-tool\n");
  fs::permissions(dir / "tool.sh", fs::owner_all);
  json generator = step();
  generator.erase("tool_identity");
  generator["tool"] = "tool.sh";
  generator["check"] = {"{tool}", "--check"};
  const fs::path recipe = write_recipe(dir, recipe_with(generator));
  const CommandResult run = kiln::test::run_kiln({"build", "--plan", recipe.string()}, kiln::test::cli_env(dir / "cache"));
  CHECK_MESSAGE(run.exit_code == 0, run.err);
  CHECK(contains(run.out, "missing"));
  CHECK(fs::exists(dir / "checked-by-tool"));
}

TEST_CASE("generator checks: the field is validated, and keys only the recipes that have it") {
  TempDir dir;
  const auto parse = [&](const json &generator) {
    write_text(dir / "a.cu", "");
    return Recipe::parse(recipe_with(generator).dump(), dir.path().string(), "r.json");
  };
  json generator = step();
  generator["check"] = json::array();
  CHECK_THROWS_WITH_AS(parse(generator), doctest::Contains("generators[0].check"), kiln::UsageError);
  generator["check"] = {"cat", "{gen}/o.h"};
  CHECK_THROWS_WITH_AS(parse(generator), doctest::Contains("uses {gen}"), kiln::UsageError);
  generator["check"] = {"{tool}", "--check"};  // the step has only a tool_identity
  CHECK_THROWS_WITH_AS(parse(generator), doctest::Contains("has no \"tool\""), kiln::UsageError);
  generator["check"] = "true";
  CHECK_THROWS_AS(parse(generator), kiln::UsageError);

  // Absent, the step's canonical form (what keys the input key) is what it was before checks
  // existed: no "check" member at all, so stores keep their hits for such recipes.
  const Recipe without = parse(step());
  CHECK(without.generators.at(0).check.empty());
  const json canonical = json::parse(without.canonical_json());
  CHECK_FALSE(canonical["generators"][0].contains("check"));
  CHECK(canonical["generators"][0].size() == 6);  // name, command, inputs, outputs, tool, tool_identity
  generator["check"] = {"true"};
  const Recipe with = parse(generator);
  CHECK(json::parse(with.canonical_json())["generators"][0]["check"] == json{"true"});
}
