// kiln: what the stores are and what they hold, as Runtime::stores() and Runtime::list() say.
#pragma once

#include <string>

namespace kiln {

// One store a Runtime sees: a read-only layer or the writable cache.
struct StoreInfo {
  std::string root;
  bool writable = false;
  std::string origin;  // "KILN_STORE_PATH", "KILN_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "options"
};

// One consumer/name as Runtime::list() finds it in a store.
struct ArtifactSummary {
  std::string consumer;
  std::string name;
  std::string content_key;
  std::string kind;
  std::string store_root;
  bool store_writable = false;
  bool shadowed = false;  // an earlier store layer has the same consumer/name
  std::string updated;
  // Listing every consumer: one whose manifest cannot be read is one item with only consumer,
  // store and this (why; kiln verify --repair moves it aside), and the others are still listed.
  std::string damaged;
};

}  // namespace kiln
