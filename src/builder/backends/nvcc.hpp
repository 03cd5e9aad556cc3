// nvcc command lines for the shared-object (plugin) backend. Lines are built with
// placeholders for the paths that vary between builds ($GEN: generated outputs, $RECIPE: the
// recipe's directory, $ABI: kiln's ABI headers, $STAGING: the build's staging directory, inside
// an -Xcompiler value, $OUT: the object or artifact), so the same
// list keys the content and object caches and, once substituted, runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/recipe.hpp>

namespace kiln::builder {

using Placeholders = std::map<std::string, std::string>;  // "$GEN" -> path, ...

// "90", "90a", "87": the arch's digits and suffix, as -gencode and CMAKE_CUDA_ARCHITECTURES write them.
std::string arch_digits(const Arch &arch);

// -gencode for each arch: sm_XY -> arch=compute_XY,code=sm_XY; compute_XY -> code=compute_XY.
std::vector<std::string> gencode_flags(const std::vector<Arch> &archs);

// nvcc -c <unit> -o $OUT with kiln's plugin flags, include dirs, defines, archs, recipe flags.
std::vector<std::string> compile_command(const Recipe &recipe, const std::vector<Arch> &archs,
                                         const std::string &unit);
// `value` inside an nvcc -Xcompiler list, which splits at commas: each comma escaped ("\,").
std::string xcompiler_escaped(const std::string &value);
// nvcc --shared -o $OUT <objects> with static cudart (unless the recipe's link flags name a
// -cudart=: "-cudart=none" for a host-only plugin), hidden exports and the recipe's link flags.
std::vector<std::string> link_command(const Recipe &recipe, const std::vector<Arch> &archs,
                                      const std::vector<std::string> &objects);

// Replace placeholders (and the recipe directory by $RECIPE in the reverse direction).
std::vector<std::string> substitute(std::vector<std::string> command, const Placeholders &values);
std::string abstract_path(const std::string &path, const std::string &recipe_dir);

}  // namespace kiln::builder
