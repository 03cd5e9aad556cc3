#include "store/layout.hpp"

#include <cstdlib>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "store/names.hpp"
#include "support/environment.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

using support::env_value;

fs::path absolute_from(const char *variable, const std::string &value) {
  fs::path path(value);
  if (!path.is_absolute()) {
    throw UsageError(std::string(variable) + " entry \"" + value +
                     "\" is not an absolute path: stores are named by absolute paths (e.g. /opt/robot/kiln)");
  }
  return path.lexically_normal();
}

}  // namespace

fs::path default_cache_dir() {
  if (const auto dir = env_value("KILN_CACHE_DIR")) return absolute_from("KILN_CACHE_DIR", *dir);
  if (const auto xdg = env_value("XDG_CACHE_HOME")) return absolute_from("XDG_CACHE_HOME", *xdg) / "kiln";
  if (const auto home = env_value("HOME")) return absolute_from("HOME", *home) / ".cache" / "kiln";
  throw UsageError("no writable store: set KILN_CACHE_DIR (or XDG_CACHE_HOME or HOME)");
}

std::vector<StoreLocation> stores_from_environment() {
  std::vector<StoreLocation> stores;
  if (const auto layers = env_value("KILN_STORE_PATH")) {
    const std::string &all = *layers;
    std::size_t start = 0;
    while (start <= all.size()) {
      const std::size_t end = std::min(all.find(':', start), all.size());
      const std::string item = all.substr(start, end - start);
      if (!item.empty()) stores.push_back({absolute_from("KILN_STORE_PATH", item), false, "KILN_STORE_PATH"});
      start = end + 1;
    }
  }
  std::string origin = env_value("KILN_CACHE_DIR") ? "KILN_CACHE_DIR" : env_value("XDG_CACHE_HOME") ? "XDG_CACHE_HOME" : "HOME";
  stores.push_back({default_cache_dir(), true, origin});
  return stores;
}

fs::path resolve_store_root(const fs::path &root) {
  boost::system::error_code error;
  const fs::path resolved = fs::weakly_canonical(root, error);
  return error ? root.lexically_normal() : resolved.lexically_normal();
}

ConsumerLayout::ConsumerLayout(fs::path store_root, std::string consumer)
    : store_root_(std::move(store_root)), consumer_(std::move(consumer)) {
  validate_name("consumer", consumer_);
}

fs::path ConsumerLayout::dir() const { return store_root_ / "consumers" / consumer_; }
fs::path ConsumerLayout::manifest() const { return dir() / "manifest.json"; }
fs::path ConsumerLayout::manifest_lock() const { return dir() / "manifest.lock"; }
fs::path ConsumerLayout::versions() const { return dir() / "versions.json"; }
fs::path ConsumerLayout::versions_lock() const { return dir() / "versions.lock"; }
fs::path ConsumerLayout::entries() const { return dir() / "store"; }
fs::path ConsumerLayout::entry(const std::string &content_key) const {
  if (!is_valid_key(content_key)) {
    throw IntegrityError("content key \"" + content_key.substr(0, 64) + "\" of consumer " + consumer_ +
                         " is not 32 lower-case hex digits: the manifest " + manifest().string() +
                         " was altered outside kiln; republish the artifact");
  }
  return entries() / content_key;
}
fs::path ConsumerLayout::bykey_dir() const { return dir() / "bykey"; }
fs::path ConsumerLayout::bykey(const std::string &input_key) const { return bykey_dir() / input_key; }
fs::path ConsumerLayout::objects() const { return dir() / "objects"; }
fs::path ConsumerLayout::locks() const { return dir() / "locks"; }
fs::path ConsumerLayout::build_lock(const std::string &input_key) const { return locks() / (input_key + ".lock"); }

}  // namespace kiln::store
