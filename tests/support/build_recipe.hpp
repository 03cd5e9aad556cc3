// A copy of tests/data/build (a two-unit nvcc recipe with a generator, and the counting nvcc
// wrapper) in a fresh directory with a cache beside it: KILN_NVCC points at the wrapper for
// the fixture's life.
#pragma once

#include <map>
#include <string>

#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "support/fixtures.hpp"

namespace kiln::test {

class BuildRecipeDir {
 public:
  BuildRecipeDir();

  fs::path src() const { return dir_ / "src"; }
  fs::path cache() const { return dir_ / "cache"; }
  fs::path recipe_file() const { return src() / "recipe.json"; }
  Recipe recipe() const { return Recipe::load(recipe_file().string()); }
  // The writable cache, declared device sm_90, and `log` (none when empty).
  RuntimeOptions options(LogCallback log = {}) const;
  // The environment for the CLI: the same cache, device and nvcc.
  std::map<std::string, std::string> cli_env() const;
  // An executable shell script named `name` in the fixture's directory (outside src/).
  fs::path script(const std::string &name, const std::string &body) const;
  // Replaces `from` by `to` in a file of src/ (once; the text must be there).
  void edit(const std::string &file, const std::string &from, const std::string &to) const;

 private:
  TempDir dir_;
  ScopedEnv nvcc_, log_;
};

// host_fma(2, 3, 1) of build-tests/two-units as `runtime` loads it: 7 + GEN_VALUE + COMMON_BASE *
// SCALE, so the answer tells which sources and defines the loaded build came from.
double two_units_answer(Runtime &runtime);

}  // namespace kiln::test
