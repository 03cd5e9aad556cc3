// kiln internal: the fields of a "backend": "cmake" recipe (docs/recipes.md "Plugins from a CMake
// project"): reading them, expanding the project's file globs, and the cache options kiln passes itself.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/recipe.hpp>

#include "builder/recipe_reader.hpp"

namespace kiln::builder {

// Cache options kiln sets on every configure; a recipe may not set them in "cmake_options".
const std::set<std::string> &kiln_cmake_options();

// Reads project, project_files, cmake_options, target and output into `recipe` (its base_dir
// and file set); UsageError / NotFoundError naming the field and the fix.
void read_cmake_fields(const RecipeReader &read, Recipe &recipe);

struct ProjectFile {
  std::string name;  // relative to the project directory ("CMakeLists.txt", "../common/x.hpp")
  std::string path;  // absolute
};

// The regular files the recipe's project_files globs match, sorted by name, each once. A glob
// matches per path component ('*', '?', '[...]'; a leading '.' only explicitly). Throws
// UsageError naming the recipe and the glob when one matches no file.
std::vector<ProjectFile> expand_project_files(const Recipe &recipe);

// CMAKE_CUDA_ARCHITECTURES for `archs`: sm_90 -> 90-real, sm_90a -> 90a-real, compute_87 -> 87-virtual.
std::string cuda_architectures(const std::vector<Arch> &archs);

}  // namespace kiln::builder
