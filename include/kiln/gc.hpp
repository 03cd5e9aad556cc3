// kiln gc: evict least-recently-used entries and object-cache files from the writable cache.
//
// Never evicted: an entry a running process has loaded (every load holds a shared flock on the
// plugin file while it is mapped; gc takes it exclusively or skips the entry), and an entry a
// manifest names, unless include_named is set. Last use is the newest of the entry's creation
// and its use marker (consumers/<c>/used/<key>), which a load touches at most once a day per
// entry (no write on every load). Read-only layers are never touched.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct GcItem;

struct GcOptions {
  // Evict, least recently used first, until the writable cache's entries and objects take at
  // most this many bytes.
  std::optional<std::uint64_t> max_bytes;
  // Evict whatever was last used longer ago than this (with max_bytes: both limits apply).
  std::optional<std::chrono::seconds> older_than;
  bool include_named = false;  // also entries a manifest names (their records are dropped)
  bool dry_run = false;        // say what would go, change nothing
  // Called with each item once its outcome is known, least recently used first; the items
  // then go here instead of into GcReport::items, so that gc's memory does not grow with what
  // it evicts (`kiln gc` prints each as it comes). Called on the collecting thread.
  std::function<void(const GcItem &)> on_item;
};

struct GcItem {
  std::string kind;      // "entry" or "object"
  std::string consumer;
  std::string path;
  std::string content_key;  // entries only
  std::uint64_t bytes = 0;
  std::int64_t last_used = 0;  // seconds since the epoch
  std::string outcome;   // "evicted", "would evict" (dry run), "kept: in use", "kept: named", "kept: busy"
};

struct GcReport {
  std::string cache;                 // the writable cache's root
  std::uint64_t bytes_before = 0;    // entries + objects
  std::uint64_t bytes_after = 0;
  std::uint64_t entries_seen = 0, objects_seen = 0;
  std::uint64_t entries_evicted = 0, objects_evicted = 0;
  double seconds = 0;
  std::vector<GcItem> items;  // (unless GcOptions::on_item took them) everything evicted (or that would be) and everything kept that a limit wanted gone
};

// "500M", "2G", "1048576": bytes (K, M, G, T: powers of 1024). UsageError otherwise.
std::uint64_t parse_size(const std::string &text);
// "30d", "12h", "90m", "45s": UsageError otherwise.
std::chrono::seconds parse_age(const std::string &text);

}  // namespace kiln
