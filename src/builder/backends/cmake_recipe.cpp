#include "builder/backends/cmake_recipe.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <map>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "builder/backends/nvcc.hpp"
#include "store/names.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

bool is_identifier(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// CMake target names: letters, digits and _ . + - (what add_library accepts without a warning).
bool is_target_name(const std::string &name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' || c == '-';
  });
}

bool has_wildcard(const std::string &component) { return component.find_first_of("*?[") != std::string::npos; }

// A relative path that stays inside the directory it is relative to.
bool stays_inside(const std::string &text) {
  if (text.empty() || text.front() == '/') return false;
  const fs::path normal = fs::path(text).lexically_normal();
  return !normal.empty() && *normal.begin() != ".." && normal != ".";
}

// Every path the glob's components match, walked from `dir`.
void match(const fs::path &dir, const std::vector<std::string> &components, std::size_t at, std::vector<fs::path> &out) {
  if (at == components.size()) {
    boost::system::error_code error;
    if (fs::is_regular_file(dir, error)) out.push_back(dir);
    return;
  }
  const std::string &component = components[at];
  if (!has_wildcard(component)) {
    boost::system::error_code error;
    const fs::path next = dir / component;
    if (fs::exists(next, error)) match(next, components, at + 1, out);
    return;
  }
  boost::system::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (::fnmatch(component.c_str(), name.c_str(), FNM_PERIOD) == 0) match(it->path(), components, at + 1, out);
  }
}

}  // namespace

const std::set<std::string> &kiln_cmake_options() {
  static const std::set<std::string> names = {"CMAKE_BUILD_TYPE",        "CMAKE_CUDA_COMPILER", "CMAKE_CXX_COMPILER",
                                              "CMAKE_CUDA_HOST_COMPILER", "CMAKE_CUDA_ARCHITECTURES",
                                              "KILN_ABI_DIR",            "KILN_GEN_DIR"};
  return names;
}

void read_cmake_fields(const RecipeReader &read, Recipe &recipe) {
  const json &root = read.root();
  recipe.project = read.path("project", read.string(root, "project", "", true), true, true);
  if (!fs::is_regular_file(fs::path(recipe.project) / "CMakeLists.txt")) {
    read.fail("project", "names " + recipe.project + ", which has no CMakeLists.txt; name the CMake project's directory");
  }

  recipe.project_files = read.strings(root, "project_files", "");
  if (recipe.project_files.empty()) {
    read.fail("project_files", "is empty or missing; list globs (relative to \"project\") of every file the build "
                               "reads, e.g. [\"CMakeLists.txt\", \"*.cu\", \"*.hpp\"], so that an edit rebuilds");
  }
  for (const auto &glob : recipe.project_files) {
    if (glob.empty() || glob.front() == '/') read.fail("project_files", "holds \"" + glob + "\"; globs are relative to \"project\"");
    if (glob.find("**") != std::string::npos) {
      read.fail("project_files", "holds \"" + glob + "\"; '**' is not supported: list each directory's glob (\"src/*.cu\")");
    }
  }
  expand_project_files(recipe);  // a glob that matches nothing is an error now, not at build time

  if (const json *options = read.find(root, "cmake_options")) {
    if (!options->is_object()) read.fail("cmake_options", "must be an object of NAME: \"value\" strings");
    for (const auto &[name, value] : options->items()) {
      const std::string field = "cmake_options." + name;
      if (!is_identifier(name)) read.fail(field, "is not a CMake variable name: use letters, digits and _ (not first a digit)");
      if (kiln_cmake_options().count(name) != 0) {
        read.fail(field, "is an option kiln sets itself (from the toolchain it identified, the archs and its "
                         "directories); remove it (use {gen} / {abi} in your own options' values)");
      }
      if (!value.is_string()) read.fail(field, "must be a string, not " + support::describe_json(value));
      const std::string text = value.get<std::string>();
      // argv carries anything, but CMakeCache.txt holds one value per line: a newline would
      // end the value there and let the rest read as another cache entry.
      if (text.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
        read.fail(field, "holds a NUL, CR or newline; a cache value is one line (';' separates list items)");
      }
      recipe.cmake_options[name] = text;
    }
  }

  recipe.target = read.string(root, "target", "", true);
  if (!is_target_name(recipe.target)) {
    read.fail("target", "is \"" + recipe.target + "\"; name the CMake target that builds the plugin (letters, digits, _ . + -)");
  }
  recipe.output = read.string(root, "output", "", true);
  if (!stays_inside(recipe.output)) {
    read.fail("output", "is \"" + recipe.output + "\"; give the file the target writes as a path relative to the "
                        "CMake build directory, e.g. \"libsolver.so\" (no '..', not absolute)");
  }
}

std::vector<ProjectFile> expand_project_files(const Recipe &recipe) {
  std::map<std::string, std::string> found;  // name -> path: sorted, each once
  for (const auto &glob : recipe.project_files) {
    std::vector<std::string> components;
    for (const auto &part : fs::path(glob)) {
      if (part != ".") components.push_back(part.string());
    }
    std::vector<fs::path> matches;
    match(fs::path(recipe.project), components, 0, matches);
    if (matches.empty()) {
      throw UsageError("recipe " + recipe.file + ": \"project_files\" glob \"" + glob + "\" matches no file in " +
                       recipe.project + "; fix or remove it");
    }
    for (const auto &path : matches) {
      const fs::path normal = path.lexically_normal();
      found.emplace(normal.lexically_relative(recipe.project).string(), normal.string());
    }
  }
  std::vector<ProjectFile> files;
  for (const auto &[name, path] : found) files.push_back({name, path});
  return files;
}

std::string cuda_architectures(const std::vector<Arch> &archs) {
  std::string list;
  for (const auto &arch : archs) {
    list += (list.empty() ? "" : ";") + arch_digits(arch) + (arch.kind == Arch::Kind::ptx ? "-virtual" : "-real");
  }
  return list;
}

}  // namespace kiln::builder
