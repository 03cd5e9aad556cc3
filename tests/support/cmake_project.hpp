// A copy of tests/data/cmake (a C++-only CMake project building a kiln test plugin, a recipe
// directory with the N4 recipe, its generator and a counting cmake wrapper) in a fresh
// directory with a cache beside it: KILN_CMAKE points at the wrapper for the fixture's life.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "support/fixtures.hpp"

namespace kiln::test {

class CmakeProjectDir {
 public:
  CmakeProjectDir();

  fs::path dir() const { return dir_.path(); }
  fs::path module() const { return dir_ / "src" / "module"; }
  fs::path recipes() const { return dir_ / "src" / "recipes"; }
  fs::path cache() const { return dir_ / "cache"; }
  fs::path pids() const { return dir_ / "pids"; }
  fs::path recipe_file(const std::string &file = "recipe-N4.json") const { return recipes() / file; }
  Recipe recipe(const std::string &file = "recipe-N4.json") const { return Recipe::load(recipe_file(file).string()); }
  // recipes/<file>: the N4 recipe's JSON as `edit` leaves it.
  Recipe variant(const std::string &file, const std::function<void(nlohmann::json &)> &edit) const;
  // The writable cache, declared device sm_90, and `log` (none when empty).
  RuntimeOptions options(LogCallback log = {}) const;

  // cmake invocations (one line each, its arguments) since the last take; `configures` counts
  // those that configured (-S), `builds` those that built (--build).
  struct Runs {
    int all = 0, configures = 0, builds = 0;
  };
  Runs take_cmake_runs() const;
  int generator_runs() const;  // the generator's runs in the fixture's life

  // host_fma(2, 3, 1) of consumer cmake-tests / `name`, loaded: 7 + N + GEN_VALUE + COMMON_BASE.
  double answer(Runtime &runtime, const std::string &name) const;

 private:
  TempDir dir_;
  ScopedEnv cmake_, cmake_log_, gen_log_, pid_dir_;
};

// Entries (and staging directories) in the fixture cache's store for consumer cmake-tests.
int store_dirs(const fs::path &cache);

}  // namespace kiln::test
