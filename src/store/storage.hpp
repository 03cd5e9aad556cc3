// The store facade (docs/architecture.md §4): the one place where the store's rules live.
//
// Readers resolve consumer/name over the layers in order (read-only layers first, then the
// writable cache); writers stage a new entry and commit it with one protocol -- entry, then
// bykey pointer, then manifest -- whether the entry came from `publish` or from a build. Each
// step is atomic (rename) and each later step only points at what an earlier one made
// visible, so a crash between any two leaves a store the next writer completes or repairs.
//
// Modelled on ccache's storage::Storage: a small facade over the store layers
// (store/local_store.hpp). Where else a build's result can come from -- a fleet's remote
// caches -- is an EntrySource (store/entry_source.hpp) the runtime composes with the build;
// what it delivers is committed here like a build. Loads never touch a remote.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <kiln/log.hpp>
#include <kiln/module.hpp>
#include <kiln/store.hpp>

#include "store/local_store.hpp"

namespace kiln::store {

// What a commit makes visible: consumer/name -> content key (and input key -> content key
// for built artifacts).
struct Publication {
  std::string consumer;
  std::string name;
  std::string content_key;
  std::string input_key;  // empty for published (not built) artifacts: no bykey pointer
  std::string kind;       // kKindPlugin or kKindImages (kiln/module.hpp)
  std::string bundle_created;  // imports: the signed creation time of the bundle (ManifestRecord)
  std::string rollback;        // imports a person let roll the name back (ManifestRecord)
};

class Storage {
 public:
  explicit Storage(const std::vector<StoreLocation> &locations);  // the writable cache last
  ~Storage();

  const std::vector<StoreInfo> &infos() const { return infos_; }
  const LocalStore &writable() const { return *layers_.back(); }
  const std::vector<std::unique_ptr<LocalStore>> &layers() const { return layers_; }  // the writable cache last

  // consumer/name in the first layer that names it. Remembered while every manifest consulted
  // and the entry's meta.json keep their identity: a warm resolve is a few stat calls.
  // NotFoundError lists what the consumer has and the stores searched. `serial`, when given,
  // is set to a number unique in the process for the remembered resolution: the same while it
  // is remembered, a new one once anything it was read from changed (the loader keeps the
  // artifact's descriptor under it: load/mapped_files.hpp).
  std::shared_ptr<const Resolution> resolve(const std::string &consumer, const std::string &name,
                                            std::uint64_t *serial = nullptr) const;
  // The same in the writable cache only (what a build just made); empty content_key: absent.
  Resolution resolve_writable(const std::string &consumer, const std::string &name) const;
  // The entry `content_key` of `consumer` in the first layer holding it, whether or not a
  // manifest still names it (an older version to swap back to). Its name is the one the
  // layer's manifest gives it, else `name`. NotFoundError when no layer has it, UsageError for
  // a malformed key.
  Resolution resolve_entry(const std::string &consumer, const std::string &content_key, const std::string &name) const;
  // Every artifact of `consumer` (all when empty), in store order, shadowed ones marked.
  std::vector<ArtifactSummary> list(const std::string &consumer) const;

  // ---- Build lookups and writes, in the writable cache (where an EntrySource delivers too).

  // The content key bykey/<input_key> points at (nullopt: none, or a damaged pointer, logged).
  std::optional<std::string> pointer(const std::string &consumer, const std::string &input_key,
                                     const LogCallback &log) const {
    return writable().pointer(consumer, input_key, log);
  }
  // An entry's records (IntegrityError when missing or damaged) and whether its files are intact.
  EntryRecords entry(const std::string &consumer, const std::string &content_key, const std::string &what) const {
    return writable().entry(consumer, content_key, what);
  }
  bool entry_intact(const std::string &consumer, const std::string &content_key) const {
    return writable().entry_intact(consumer, content_key);
  }
  // One builder per input key across threads and processes.
  files::FileLock lock_input_key(const std::string &consumer, const std::string &input_key,
                          const CancelToken *cancel = nullptr) const {
    return writable().lock_input_key(consumer, input_key, cancel);
  }
  // A fresh private directory to assemble a new entry of `consumer` in.
  Staging stage(const std::string &consumer, const LogCallback &log, SweepFirst sweep = SweepFirst::yes) const {
    return writable().stage(consumer, log, sweep);
  }

  // The publish protocol. `staging` holds the entry's files and records; an intact entry
  // already under its key is reused (returns false), or replaced when its bytes differ and
  // `existing` says so (LocalStore::commit_entry). Then bykey (when built) and the manifest.
  bool commit(Staging &&staging, const Publication &publication, const LogCallback &log,
              ExistingEntry existing = ExistingEntry::keep) const;
  // The same for an entry already in the writable cache (a build whose content key exists):
  // only the pointers are written, and only where they differ.
  void point(const Publication &publication) const;
  // The same for many entries already committed (an import): every bykey pointer, then one
  // manifest update per consumer, so each consumer's new names become visible together.
  void point_all(const std::vector<Publication> &publications) const;

  // Called after a commit or point made the writable manifest name another content key for
  // consumer/name (decided under the manifest lock, so exact with concurrent writers): the
  // runtime tells running watchers (hot swap's trigger). Must not throw.
  using RenameObserver = std::function<void(const std::string &consumer, const std::string &name)>;
  void on_rename(RenameObserver observer) { on_rename_ = std::move(observer); }

 private:
  // manifest_id / meta_id, when given: the identities of the manifest and meta.json the answer
  // was read from (LocalStore's), for remembering it.
  Resolution resolve_in(const LocalStore &layer, const std::string &consumer, const std::string &name,
                        bool *consumer_seen, std::vector<std::string> *known,
                        std::optional<files::FileIdentity> *manifest_id = nullptr, files::FileIdentity *meta_id = nullptr) const;
  Resolution entry_resolution(const LocalStore &layer, const std::string &consumer, const std::string &name,
                              const ManifestRecord &record, files::FileIdentity *meta_id = nullptr) const;

  std::vector<std::unique_ptr<LocalStore>> layers_;
  std::vector<StoreInfo> infos_;
  RenameObserver on_rename_;

  struct CachedResolution {
    std::vector<std::string> manifest_files;  // every layer consulted, in order
    std::vector<std::optional<files::FileIdentity>> manifest_ids;
    std::string meta_file;
    files::FileIdentity meta_id;
    std::shared_ptr<const Resolution> resolution;
    std::uint64_t serial = 0;
  };
  mutable std::mutex cache_mutex_;
  mutable std::map<std::string, std::shared_ptr<const CachedResolution>> resolutions_;  // "consumer/name"
};

}  // namespace kiln::store
