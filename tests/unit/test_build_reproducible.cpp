// Reproducible builds (docs/architecture.md §3): the same recipe built again with --force writes
// the same bytes -- through nvcc directly and through a CMake project compiling CUDA -- even
// with debug info, which records every path the compilers saw; and a forced rebuild over a
// stored entry never calls it damaged.
#include <doctest/doctest.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/log.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "support/build_recipe.hpp"
#include "support/checks.hpp"
#include "support/cmake_project.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::contains;
using kiln::test::read_text;
using kiln::test::write_text;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

// Every line a runtime logged (builds log from their worker threads).
class Logged {
 public:
  LogCallback callback() {
    return [this](LogLevel, const std::string &message) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(message);
    };
  }
  // The lines holding `words`, joined (empty: none).
  std::string with(const std::string &words) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string found;
    for (const auto &line : lines_) {
      if (contains(line, words)) found += line + "\n";
    }
    return found;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

// "" when the two are the same bytes, else where they part (not the bytes: they are binary).
std::string difference(const std::string &a, const std::string &b) {
  if (a == b) return "";
  std::size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  return std::to_string(a.size()) + " and " + std::to_string(b.size()) + " bytes, first difference at byte " +
         std::to_string(at);
}

// Entries moved aside under a store directory (damaged, or replaced by a forced rebuild).
std::vector<std::string> moved_aside(const fs::path &store) {
  std::vector<std::string> found;
  for (fs::directory_iterator it(store), end; it != end; ++it) {
    const std::string name = it->path().filename().string();
    if (name.rfind(".staging-", 0) == 0) found.push_back(name);
  }
  return found;
}

// Builds `recipe`; takes its artifact's bytes, removes the entry, and builds again with
// --force: the bytes must be the same. Then forces a third build over the stored entry: the
// same bytes keep it ("reused"), and nothing is logged as damaged or rebuilt.
void check_forced_rebuilds_reproduce(Runtime &runtime, const Recipe &recipe, const Logged &log) {
  const BuildResult first = runtime.build(recipe);
  REQUIRE(first.outcome == BuildResult::Outcome::built);
  const fs::path entry = first.entry_dir;
  const std::string bytes = read_text(entry / recipe.artifact);
  BuildOptions force;
  force.force = true;

  fs::remove_all(entry);  // nothing stored: the forced build commits its own bytes
  const BuildResult second = runtime.build(recipe, force);
  CHECK(second.outcome == BuildResult::Outcome::built);
  REQUIRE(second.content_key == first.content_key);
  CHECK(difference(bytes, read_text(entry / recipe.artifact)) == "");

  const BuildResult third = runtime.build(recipe, force);
  CHECK(third.content_key == first.content_key);
  CHECK(third.outcome == BuildResult::Outcome::reused);  // the same bytes: the stored entry stays
  for (const auto &unit : third.units) CHECK_FALSE(unit.cached);  // really compiled again
  CHECK(difference(bytes, read_text(entry / recipe.artifact)) == "");
  CHECK(log.with("damaged") == "");
  CHECK(log.with("rebuilt:") == "");
  CHECK(moved_aside(entry.parent_path()).empty());
}

}  // namespace

TEST_SUITE("reproducible") {

TEST_CASE("reproducible: the nvcc backend's plugin, with debug info, is the same bytes when built again with --force" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  kiln::test::BuildRecipeDir fx;
  // -g: the debug info names the generated header (in staging/gen) and nvcc's intermediate
  // files (beside the objects, in staging/obj), so the staging directory must be mapped away.
  json recipe = json::parse(read_text(fx.recipe_file()));
  recipe["flags"] = {"-O2", "-g"};
  write_text(fx.recipe_file(), recipe.dump(2));
  Logged log;
  Runtime runtime(fx.options(log.callback()));
  check_forced_rebuilds_reproduce(runtime, fx.recipe(), log);
}

TEST_CASE("reproducible: a CMake project compiling CUDA, with debug info, gives the same bytes when built again with --force" *
          kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
  kiln::test::CmakeProjectDir fx;
  // The recipe's own flags are kept beside kiln's (CMAKE_<LANG>_FLAGS are merged, not replaced).
  const Recipe recipe = fx.variant("cuda.json", [](json &r) {
    r["cmake_options"]["KILN_TEST_CUDA"] = "ON";
    r["cmake_options"]["CMAKE_CUDA_FLAGS"] = "-g";
    r["cmake_options"]["CMAKE_CXX_FLAGS"] = "-g";
  });
  Logged log;
  Runtime runtime(fx.options(log.callback()));
  check_forced_rebuilds_reproduce(runtime, recipe, log);
  // The build really went through nvcc, with the recipe's -g and kiln's flags together.
  const std::string build_log = read_text(fs::path(runtime.build(recipe).entry_dir) / "build.log");
  CHECK(contains(build_log, "-DCMAKE_CUDA_FLAGS=-objtemp -Xcompiler=-ffile-prefix-map="));
  CHECK(contains(build_log, "=. -g"));
}

}  // TEST_SUITE
