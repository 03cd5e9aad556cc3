// A store entry's meta.json: what the entry holds and the digest of its artifact file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <kiln/module.hpp>

#include <nlohmann/json_fwd.hpp>

#include "files/file_identity.hpp"
#include "store/layout.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

struct EntryMeta {
  std::string content_key;
  std::string kind;        // kKindPlugin or kKindImages (kiln/module.hpp)
  std::string file;        // file name inside the entry directory (images: the image index)
  std::string digest;      // XXH3-128 of the file as stored
  std::uint64_t size = 0;
  std::string created;     // UTC ISO-8601
  // kind "images" only (optional fields of artifact schema 1; absent for plugins):
  std::vector<ArtifactImage> images;    // every image file, with its own digest and size
  std::vector<ArtifactKernel> kernels;  // name expression -> lowered name
};

// Throws IntegrityError when the entry or its meta.json is missing or malformed (not regular,
// too large, too deep, a field of the wrong type or out of range; for kind "images" also: no
// image, an image with a bad name, digest, kind or arch), IncompatibleError for another
// artifact schema, IoError when it cannot be read (EACCES, EIO): that is no sign of damage.
// `checked`, when given: meta.json must also pass the store's owner and mode rules on the
// descriptor read (files/safety.hpp files::read_store_record), and receives that descriptor's identity.
EntryMeta read_entry_meta(const fs::path &entry_dir, files::FileIdentity *checked = nullptr);
// The same for meta.json's text already read (`entry_dir` names the entry in messages).
EntryMeta parse_entry_meta(const std::string &text, const fs::path &entry_dir);
std::string serialize_entry_meta(const EntryMeta &meta);

// The JSON forms of meta.json's "images" and "kernels" (also the body of an images artifact's
// index file); parse_* throw IntegrityError naming `source` and the field.
nlohmann::json images_json(const std::vector<ArtifactImage> &images);
nlohmann::json kernels_json(const std::vector<ArtifactKernel> &kernels);
std::vector<ArtifactImage> parse_images(const nlohmann::json &json, const std::string &source);
std::vector<ArtifactKernel> parse_kernels(const nlohmann::json &json, const std::string &source);

// Every file the entry holds (the artifact file and, for images, each image) exists.
bool entry_files_present(const fs::path &entry_dir, const EntryMeta &meta);
// ... and each has its recorded digest (reads them all). false for damage (a file missing, not
// regular, or with other bytes); IoError when a file cannot be read (EACCES, EIO), which must
// not be mistaken for damage (a damaged entry is moved aside, a merely unreadable one must not be).
bool entry_files_intact(const fs::path &entry_dir, const EntryMeta &meta);

// Make a filled staging directory the entry: fsync its files and itself (sync_staging), rename
// it to `entry_dir` (place_staging), fsync the entry and its parent. Returns false (and removes
// the staging directory) when an entry with that content key already exists: entries are
// immutable and identical by key.
bool commit_staging(const fs::path &staging_dir, const fs::path &entry_dir);

// commit_staging's steps, for a writer that commits many entries at once (LocalStore::
// commit_entries) and makes them durable with one flush of the file system instead of each
// file's fsync. sync_staging: fsync every file and directory below staging_dir, and itself.
void sync_staging(const fs::path &staging_dir);
// A staging directory whose files are durable renamed to `entry_dir` (its liveness lock removed
// first); false (the staging directory removed) when another writer's entry took the name. The
// rename is durable only once entry_dir and its parent are fsynced (or the file system synced).
bool place_staging(const fs::path &staging_dir, const fs::path &entry_dir);

}  // namespace kiln::store
