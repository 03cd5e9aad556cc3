// One store directory (a read-only layer or the writable cache, docs/architecture.md §4): its manifests,
// entries and bykey pointers, and the primitive writes the commit protocol is made of.
// Storage (store/storage.hpp) is the facade over all of them; nothing else reads or writes a
// store directly.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <kiln/cancel.hpp>
#include <kiln/identity.hpp>
#include <kiln/log.hpp>

#include "store/entry.hpp"
#include "files/file_identity.hpp"
#include "store/layout.hpp"
#include "files/locks.hpp"
#include "store/manifest.hpp"
#include "store/staging.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

// What commit_entry does with an entry already under the content key that is valid by its own
// records (its files match its own meta.json) but holds other bytes than the new one: the
// toolchain wrote different bytes for the same inputs (docs/architecture.md §3, reproducible builds).
enum class ExistingEntry {
  keep,     // entries are identical by key: the stored output serves, the new copy is dropped
  replace,  // a forced rebuild: the new bytes take the name, the stored entry is moved aside
};

// An entry's records as read from its meta.json and identity.json.
struct EntryRecords {
  files::FileIdentity meta_id;  // meta.json stands for the whole entry (entries never change in place)
  EntryMeta meta;
  ArtifactIdentity identity;
};

// Whether a LocalStore keeps what it parsed (manifests, entries' records) for the next read.
enum class ParsedRecords {
  remember,  // loads and builds: a warm read is one stat call
  forget,    // walks over every entry (kiln verify, kiln gc): memory stays flat however large the store
};

class LocalStore {
 public:
  explicit LocalStore(StoreLocation location, ParsedRecords parsed = ParsedRecords::remember);

  const StoreLocation &location() const { return location_; }
  const fs::path &root() const { return location_.root; }
  bool writable() const { return location_.writable; }
  ConsumerLayout layout(const std::string &consumer) const { return ConsumerLayout(location_.root, consumer); }

  // ---- Reading: no lock (manifests and pointers are replaced by rename, entries never change).
  // Parsed files are remembered while their identity (inode, size, times) is unchanged, so a
  // warm read is one stat call; a cold one is one open, checked (owner, mode, no link) and
  // identified on its descriptor (files/safety.hpp files::read_store_record), and no stat.

  // nullptr when the consumer has no manifest in this store; typed errors when it is damaged.
  // `used`, when given, receives the identity of the manifest file the answer came from (nullopt:
  // none): a cold read's is its descriptor's, so a caller remembering the answer by it never
  // pairs an older answer with a newer file.
  std::shared_ptr<const Manifest> manifest(const std::string &consumer,
                                           std::optional<files::FileIdentity> *used = nullptr) const;
  // An entry's records (meta_id: the identity of the meta.json they came from); IntegrityError
  // when missing or damaged (`what` names the artifact in the message), IoError when it cannot
  // be read.
  EntryRecords entry(const std::string &consumer, const std::string &content_key, const std::string &what) const;
  // The content key bykey/<input_key> points at; nullopt when there is none or it is damaged
  // (logged: a damaged pointer is rebuilt over, never followed).
  std::optional<std::string> pointer(const std::string &consumer, const std::string &input_key,
                                     const LogCallback &log) const;
  // The entry exists and every file it lists has its recorded digest (and, when `digest` is
  // given, the artifact file has that digest). Reads every file: for writers, not for loads.
  // false means damaged; IoError (EACCES, EIO) is thrown, never taken for damage.
  bool entry_intact(const std::string &consumer, const std::string &content_key, const std::string &digest = "") const;

  // ---- Writing (the writable cache only).

  // A fresh staging directory for a new entry of `consumer`; dead writers' leftovers are swept
  // first unless this writer already swept them (SweepFirst::already_swept).
  Staging stage(const std::string &consumer, const LogCallback &log, SweepFirst sweep = SweepFirst::yes) const;
  // The build lock of one input key: one builder per key across threads and processes. With a
  // cancel token, waiting for another holder stops (typed error) once it is cancelled.
  files::FileLock lock_input_key(const std::string &consumer, const std::string &input_key,
                          const CancelToken *cancel = nullptr) const;
  // Renames a filled staging directory into store/<content key>. An entry with the same bytes
  // under that key is kept (false is returned and the staging directory removed); so is one
  // valid by its own records with other bytes, unless `existing` is replace: then it is moved
  // aside (store/.staging-<random>-replaced, swept a day later) and logged at info level as
  // "rebuilt: output differs from the stored entry (not reproducible: <which files, where>)".
  // A damaged one is moved aside first (a warning), never modified in place and never trusted.
  bool commit_entry(Staging &&staging, const LogCallback &log, ExistingEntry existing = ExistingEntry::keep) const;
  // commit_entry for many stagings at once (an import), with the same outcome per entry (true:
  // renamed into place; false: an entry already there was kept, or another writer's won), and
  // the same crash safety for fewer flushes: one syncfs (per file system the entries go to)
  // makes every staged file durable, then each staging is renamed into place (`placed`, when
  // given, hears its index after), then one more syncfs makes the renames durable. An entry
  // already under a key is judged as commit_entry judges it (ExistingEntry::keep). On a throw,
  // the stagings not yet renamed are removed; the entries renamed before stay, named by no
  // manifest yet.
  std::vector<bool> commit_entries(std::vector<Staging> stagings, const LogCallback &log,
                                   const std::function<void(std::size_t)> &placed = {}) const;
  // bykey/<input_key> -> content key (written only when it differs). Its temp files are swept
  // only once the build lock of input_key is free and they are old (sweep.hpp).
  void write_pointer(const std::string &consumer, const std::string &input_key, const std::string &content_key) const;
  // manifest.json's record for `name`, under the manifest lock (written only when it differs).
  // True when the content key the manifest names for `name` changed (it named none or another),
  // as decided under the lock: what a running process serving the name should hear about.
  bool write_record(const std::string &consumer, const std::string &name, const ManifestRecord &record) const;
  // Several records of one consumer in one manifest update (one rename: all or none visible),
  // written only when one differs (an import of many names). Returns the names whose content
  // key changed. NotFoundError (nothing written) when an entry a record names is gone (kiln gc
  // evicted it after the caller found it).
  std::vector<std::string> write_records(const std::string &consumer,
                                         const std::map<std::string, ManifestRecord> &records) const;

  // ---- Repairs (kiln verify --repair): nothing is deleted that could still be inspected.

  // store/<content_key> renamed to store/.staging-<random>-damaged (swept a day later);
  // returns where it went.
  fs::path move_entry_aside(const std::string &consumer, const std::string &content_key, const LogCallback &log) const;
  // Removes the manifest record of `name`, under the manifest lock, if it still names
  // content_key; true when it did.
  bool drop_record(const std::string &consumer, const std::string &name, const std::string &content_key) const;
  // The same for a caller holding the manifest lock already.
  bool drop_record_locked(const std::string &consumer, const std::string &name, const std::string &content_key) const;
  // Removes bykey/<input_key> under its build lock if it still reads as it did (damaged, or
  // naming content_key); false when a live build holds the lock or it changed meanwhile.
  bool drop_pointer(const std::string &consumer, const std::string &input_key,
                    const std::optional<std::string> &content_key) const;
  // manifest.json, unreadable, renamed to manifest.json.damaged-<random> under the manifest
  // lock, so that the next writer starts a fresh one; returns where it went.
  fs::path move_manifest_aside(const std::string &consumer) const;

 private:
  // files::create_directories, where a failure caused by the store's root itself (this user
  // cannot write it) says so with the fix (store/unwritable.hpp).
  void create_store_directories(const fs::path &dir) const;
  // store/<content_key> renamed to store/.staging-<random><suffix>; returns where it went.
  fs::path rename_aside(const std::string &consumer, const std::string &content_key, const char *suffix) const;
  // Before a staging is renamed in: an entry under its key that serves (intact, or valid and
  // `existing` is keep) -> false, nothing to commit; a damaged one, or a valid one being
  // replaced, is moved aside -> true.
  bool make_room(const Staging &staging, const LogCallback &log, ExistingEntry existing) const;

  StoreLocation location_;
  ParsedRecords parsed_;

  struct CachedManifest {
    files::FileIdentity id;
    std::shared_ptr<const Manifest> manifest;
  };
  mutable std::mutex cache_mutex_;
  mutable std::map<std::string, CachedManifest> manifests_;  // by consumer
  mutable std::map<std::string, EntryRecords> entries_;      // by entry directory
};

}  // namespace kiln::store
