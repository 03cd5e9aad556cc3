// A store entry's meta.json: what the entry holds and the digest of its artifact file.
#pragma once

#include <cstdint>
#include <string>

#include "store/layout.hpp"

namespace kiln::store {

struct EntryMeta {
  std::string content_key;
  std::string kind;        // "plugin"
  std::string file;        // file name inside the entry directory
  std::string digest;      // XXH3-128 of the file as stored
  std::uint64_t size = 0;
  std::string created;     // UTC ISO-8601
};

// Throws NotFoundError when the entry or its meta.json is missing, IntegrityError when malformed.
EntryMeta read_entry_meta(const fs::path &entry_dir);
std::string serialize_entry_meta(const EntryMeta &meta);

// Make a filled staging directory the entry: fsync its files and itself, rename it to
// `entry_dir`, fsync the parent. Returns false (and removes the staging directory) when an
// entry with that content key already exists: entries are immutable and identical by key.
bool commit_staging(const fs::path &staging_dir, const fs::path &entry_dir);

}  // namespace kiln::store
