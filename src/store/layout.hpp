// Where things live in a store (docs/architecture.md §4) and which stores a process sees.
#pragma once

#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

namespace kiln::store {

namespace fs = boost::filesystem;

struct StoreLocation {
  fs::path root;
  bool writable = false;  // the one writable cache; read-only layers are searched first
  std::string origin;     // where it came from: "KILN_STORE_PATH", "KILN_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "api"
};

// Read-only layers from KILN_STORE_PATH (colon-separated, in order), then the writable cache:
// KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln. Relative paths are refused.
std::vector<StoreLocation> stores_from_environment();
fs::path default_cache_dir();

// The store root with every symlink in it resolved (realpath), resolved once when a Runtime
// starts: a symlink the user chose for the root (~/.cache -> /data/cache) is then no longer in
// the way of the safety walk, which refuses symlinks inside a store. A root that does not exist
// yet keeps its missing tail as written.
fs::path resolve_store_root(const fs::path &root);

// The paths of one consumer inside one store.
class ConsumerLayout {
 public:
  ConsumerLayout(fs::path store_root, std::string consumer);

  const fs::path &store_root() const { return store_root_; }
  const std::string &consumer() const { return consumer_; }
  fs::path dir() const;                                 // <store>/consumers/<consumer>
  fs::path manifest() const;                            // .../manifest.json
  fs::path manifest_lock() const;                       // .../manifest.lock
  fs::path versions() const;                            // .../versions.json (bundle/release_versions.hpp)
  fs::path versions_lock() const;                       // .../versions.lock
  fs::path entries() const;                             // .../store
  fs::path entry(const std::string &content_key) const; // .../store/<content_key>
  fs::path bykey_dir() const;                           // .../bykey
  fs::path bykey(const std::string &input_key) const;   // .../bykey/<input_key>
  fs::path objects() const;                             // .../objects
  fs::path locks() const;                               // .../locks
  fs::path build_lock(const std::string &input_key) const;  // .../locks/<input_key>.lock

 private:
  fs::path store_root_;
  std::string consumer_;
};

inline constexpr const char *kMetaFile = "meta.json";
inline constexpr const char *kIdentityFile = "identity.json";
inline constexpr const char *kBuildLogFile = "build.log";
inline constexpr const char *kStagingPrefix = ".staging-";  // store/.staging-*: never an entry
inline constexpr const char *kStagingVersionTag = "v2-";    // staging directories held by a lock (staging.hpp)
inline constexpr const char *kStagingLockFile = ".staging.lock";  // inside each of them
// Staging directories that were entries: moved aside as damaged (kept a day for inspection, then
// swept), replaced by a forced rebuild whose bytes differ (kept and swept alike: readers may
// still map the old file), or renamed out of store/ by kiln gc on their way to removal.
inline constexpr const char *kDamagedSuffix = "-damaged";
inline constexpr const char *kReplacedSuffix = "-replaced";
inline constexpr const char *kEvictedSuffix = "-evicted";

}  // namespace kiln::store
