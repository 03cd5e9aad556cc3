// Persisted verification records: "the file with this identity had this digest and carried this
// build stamp", kept in the writable cache (<cache>/verified/<content key>) so that a fresh
// process loading an unchanged artifact skips hashing it, as git's index skips re-reading files
// whose stat data is unchanged.
//
// Why an identity is enough: device, inode, size, mtime and ctime. Every write through the file
// system sets ctime to the current time and no user can set it back, and store entries are only
// ever replaced by rename (a new inode). A record is written only for a file whose ctime is
// older than kSettled, so a write landing in the same clock tick as the check cannot hide behind
// an equal ctime (git's "racy" case). A record grants nothing a writer of the cache could not
// already do: whoever can forge one can also rewrite the entry and its recorded digest; records
// about read-only layers' files (root-owned, unchangeable without a new ctime) hold only for
// those exact files. A record that is damaged, foreign or unreadable is ignored (the file is
// hashed); one that cannot be written is skipped. Neither is ever an error.
#pragma once

#include <chrono>
#include <string>

#include <kiln/log.hpp>

#include "files/file_identity.hpp"
#include "files/files.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

class VerificationRecords {
 public:
  static constexpr std::chrono::seconds kSettled{2};

  // dir: <writable cache>/verified; empty: no records (no writable cache).
  explicit VerificationRecords(fs::path dir) : dir_(std::move(dir)) {}

  // True when a record says the file with `id` was verified to hold `digest` and the build
  // stamp `content_key`. A few system calls; never throws.
  bool vouches(const std::string &content_key, const files::FileIdentity &id, const std::string &digest) const noexcept;
  // Records a successful verification (temp file + rename, no fsync: a record lost in a power
  // cut only costs one more hash). Skipped for a file changed within kSettled. Never throws.
  void remember(const std::string &content_key, const files::FileIdentity &id, const std::string &digest,
                const LogCallback &log) const noexcept;

 private:
  fs::path dir_;
};

}  // namespace kiln::store
