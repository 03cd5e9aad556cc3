// kiln internal: reading a recipe's JSON fields, each failure a UsageError naming the recipe
// file, the field and the fix (recipe.cpp, cmake_recipe.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>

#include "support/json_read.hpp"

namespace kiln::builder {

class RecipeReader {
 public:
  RecipeReader(const nlohmann::json &root, std::string file, boost::filesystem::path base)
      : root_(root), file_(std::move(file)), base_(std::move(base)) {}

  [[noreturn]] void fail(const std::string &field, const std::string &why) const {
    throw UsageError("recipe " + file_ + ": \"" + field + "\" " + why);
  }

  const nlohmann::json *find(const nlohmann::json &object, const std::string &key) const {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }

  std::string string(const nlohmann::json &object, const std::string &key, const std::string &where, bool required,
                     const std::string &fallback = "") const {
    const nlohmann::json *value = find(object, key);
    if (value == nullptr) {
      if (required) fail(where + key, "is missing");
      return fallback;
    }
    if (!value->is_string()) fail(where + key, "must be a string, not " + support::describe_json(*value));
    return value->get<std::string>();
  }

  std::vector<std::string> strings(const nlohmann::json &object, const std::string &key, const std::string &where) const {
    const nlohmann::json *value = find(object, key);
    if (value == nullptr) return {};
    if (!value->is_array()) fail(where + key, "must be a list of strings");
    std::vector<std::string> out;
    for (const auto &item : *value) {
      if (!item.is_string()) fail(where + key, "must be a list of strings; found " + support::describe_json(item));
      const std::string text = item.get<std::string>();
      if (text.find('\0') != std::string::npos || text.find('\n') != std::string::npos) {
        fail(where + key, "holds a string with a NUL or newline");
      }
      out.push_back(text);
    }
    return out;
  }

  // A path relative to the recipe's directory, made absolute; must exist (as a file or dir).
  std::string path(const std::string &field, const std::string &text, bool want_dir, bool may_be_dir) const {
    if (text.empty()) fail(field, "holds an empty path");
    boost::filesystem::path p(text);
    if (!p.is_absolute()) p = base_ / p;
    p = p.lexically_normal();
    boost::system::error_code error;
    const boost::filesystem::file_status status = boost::filesystem::status(p, error);
    if (!boost::filesystem::exists(status)) {
      throw NotFoundError("recipe " + file_ + ": \"" + field + "\" names " + p.string() +
                          ", which does not exist (paths are relative to the recipe's directory " + base_.string() +
                          ")");
    }
    const bool is_dir = boost::filesystem::is_directory(status);
    if (want_dir && !is_dir) fail(field, "names " + p.string() + ", which is not a directory");
    if (!want_dir && !may_be_dir && !boost::filesystem::is_regular_file(status)) {
      fail(field, "names " + p.string() + ", which is not a regular file");
    }
    // A FIFO or device (/dev/zero) would hang or never end the hashing of the inputs.
    if (may_be_dir && !is_dir && !boost::filesystem::is_regular_file(status)) {
      fail(field, "names " + p.string() + ", which is neither a regular file nor a directory");
    }
    return p.string();
  }

  const nlohmann::json &root() const { return root_; }
  const std::string &file() const { return file_; }

 private:
  const nlohmann::json &root_;
  std::string file_;
  boost::filesystem::path base_;
};

}  // namespace kiln::builder
