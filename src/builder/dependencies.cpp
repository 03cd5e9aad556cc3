#include "builder/dependencies.hpp"

#include <algorithm>
#include <set>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>

#include "builder/keys.hpp"
#include "files/digest.hpp"
#include "files/files.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

constexpr std::size_t kMaxDependencyRecordBytes = 4 * 1024 * 1024;

bool is_inside(const std::string &path, const std::string &dir) {
  return !dir.empty() && path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// Symlinks resolved where the file exists (the toolkit is often reached through /usr/local/cuda).
std::string real_or_normal_path(const fs::path &path) {
  boost::system::error_code error;
  const fs::path real = fs::canonical(path, error);
  return (error ? path.lexically_normal() : real).string();
}

}  // namespace

std::vector<std::string> parse_depfile(const std::string &text) {
  std::vector<std::string> paths;
  std::set<std::string> seen;
  std::string word;
  bool in_prerequisites = false;  // after a rule's ':'
  const auto finish_word = [&] {
    if (word.empty()) return;
    if (in_prerequisites && seen.insert(word).second) paths.push_back(word);
    word.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      const char next = text[i + 1];
      if (next == '\n' || (next == '\r' && i + 2 < text.size() && text[i + 2] == '\n')) {  // continuation
        finish_word();
        i += next == '\r' ? 2 : 1;
        continue;
      }
      if (next == ' ' || next == '#' || next == '\\') {
        word += next;
        ++i;
        continue;
      }
      word += c;
      continue;
    }
    if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      word += '$';
      ++i;
      continue;
    }
    if (c == '\n' || c == '\r') {  // a rule ends
      finish_word();
      in_prerequisites = false;
      continue;
    }
    if (c == ' ' || c == '\t') {
      finish_word();
      continue;
    }
    // "target:" or "target :" (a ':' ending a word, or standing alone) starts the prerequisites.
    if (c == ':' && !in_prerequisites && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\t' ||
                                          text[i + 1] == '\n' || text[i + 1] == '\r')) {
      word.clear();  // the target
      in_prerequisites = true;
      continue;
    }
    word += c;
  }
  finish_word();
  return paths;
}

DependencyRoots dependency_roots(const std::string &recipe_dir, const std::string &abi_dir, const fs::path &staging,
                                 const std::string &nvcc_path, const std::string &compile_cwd) {
  return {real_or_normal_path(recipe_dir), real_or_normal_path(abi_dir), real_or_normal_path(staging),
          real_or_normal_path(fs::path(nvcc_path).parent_path().parent_path() / "include"), compile_cwd};
}

std::vector<std::string> recorded_dependencies(const std::vector<std::string> &depfile_paths, const std::string &source,
                                               const DependencyRoots &roots) {
  const std::string own = source.empty() ? std::string() : real_or_normal_path(source);
  std::vector<std::string> real;
  std::string toolkit_include;  // where nvcc's forced cuda_runtime.h is: the toolkit's headers, whoever runs nvcc
  for (const auto &path : depfile_paths) {
    fs::path file(path);
    if (file.is_relative()) file = fs::path(roots.compile_cwd) / file;
    real.push_back(real_or_normal_path(file));
    if (fs::path(real.back()).filename() == "cuda_runtime.h") toolkit_include = fs::path(real.back()).parent_path().string();
  }
  static const char *const system_dirs[] = {"/usr/include", "/usr/local/include", "/usr/lib/gcc"};
  std::set<std::string> recorded;
  for (const auto &path : real) {
    const bool system = std::any_of(std::begin(system_dirs), std::end(system_dirs),
                                    [&](const char *dir) { return is_inside(path, dir); });
    if (system || path == own || is_inside(path, roots.toolkit_dir) || is_inside(path, toolkit_include) ||
        is_inside(path, roots.abi_dir) || is_inside(path, roots.staging_dir)) {
      continue;
    }
    recorded.insert(is_inside(path, roots.recipe_dir) ? "$RECIPE/" + path.substr(roots.recipe_dir.size() + 1) : path);
  }
  return {recorded.begin(), recorded.end()};
}

fs::path dependency_file(const std::string &recorded, const std::string &recipe_dir) {
  if (recorded.compare(0, 8, "$RECIPE/") == 0) return fs::path(recipe_dir) / recorded.substr(8);
  return fs::path(recorded);
}

std::map<std::string, std::string> dependency_digests(const std::vector<std::string> &recorded, const std::string &recipe_dir) {
  std::map<std::string, std::string> digests;
  for (const auto &path : recorded) {
    const fs::path file = dependency_file(path, recipe_dir);
    try {
      digests[path] = input_file_digest(file);
    } catch (const Error &) {
      boost::system::error_code error;
      if (fs::symlink_status(file, error).type() != fs::file_not_found) throw;  // there, but unreadable
      digests[path] = "(missing)";  // a reason to rebuild (whose compile then says what is wrong)
    }
  }
  return digests;
}

std::optional<std::vector<std::string>> read_dependency_record(const fs::path &file) {
  struct Unusable {};
  try {
    const nlohmann::json record = support::parse_json(files::read_file(file, files::FileOrigin::store, kMaxDependencyRecordBytes),
                                                      [](const std::string &) { throw Unusable{}; });
    if (!record.is_object() || !record.contains("dependencies") || !record["dependencies"].is_array()) {
      return std::nullopt;
    }
    std::vector<std::string> recorded;
    for (const auto &item : record["dependencies"]) {
      if (!item.is_string()) return std::nullopt;
      recorded.push_back(item.get<std::string>());
    }
    return recorded;
  } catch (const Error &) {
  } catch (const Unusable &) {
  }
  return std::nullopt;  // missing, unreadable or malformed: only a cache; the unit compiles and rewrites it
}

void write_dependency_record(const fs::path &file, const std::vector<std::string> &recorded) {
  files::write_file_atomic(file, support::dump_json(nlohmann::json{{"dependencies", recorded}}, 1) + "\n");
}

std::string key_with_dependencies(const std::string &kind, const std::string &base,
                                  const std::map<std::string, std::string> &digests) {
  files::Hasher key;
  key.add_field("key", kind).add_field("base", base);
  for (const auto &[path, digest] : digests) key.add_field("dependency " + path, digest);
  return key.hex();
}

std::string dependency_field(const std::string &recorded) { return kDependencyField + recorded; }

}  // namespace kiln::builder
