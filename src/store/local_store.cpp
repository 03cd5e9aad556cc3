#include "store/local_store.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <set>

#include <sys/stat.h>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "artifact/identity_json.hpp"
#include "store/entry_differences.hpp"
#include "files/files.hpp"
#include "store/names.hpp"
#include "files/safety.hpp"
#include "store/sweep.hpp"
#include "store/unwritable.hpp"
#include "support/fault_point.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

LocalStore::LocalStore(StoreLocation location, ParsedRecords parsed) : location_(std::move(location)), parsed_(parsed) {}

std::shared_ptr<const Manifest> LocalStore::manifest(const std::string &consumer,
                                                     std::optional<files::FileIdentity> *used) const {
  const fs::path file = layout(consumer).manifest();
  std::optional<files::FileIdentity> remembered;
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto hit = manifests_.find(consumer);
    if (hit != manifests_.end()) remembered = hit->second.id;
  }
  if (remembered) {
    // Owner and mode were checked when this identity was read (chmod and chown change ctime),
    // so a warm hit needs no more than this stat: an others-writable manifest could roll an
    // artifact back.
    const auto id = files::identify(file);
    if (used != nullptr) *used = id;
    if (!id) return nullptr;
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto hit = manifests_.find(consumer);
    if (hit != manifests_.end() && hit->second.id == *id) return hit->second.manifest;
  }
  files::FileIdentity read_id;
  std::string text;
  try {
    text = files::read_store_record(file, files::kMaxJsonFileBytes, &read_id);
  } catch (const NotFoundError &) {
    if (used != nullptr) used->reset();
    return nullptr;
  }
  auto shared = std::make_shared<const Manifest>(parse_manifest(text, file, consumer));
  if (used != nullptr) *used = read_id;
  if (parsed_ == ParsedRecords::forget) return shared;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  manifests_[consumer] = {read_id, shared};
  return shared;
}

EntryRecords LocalStore::entry(const std::string &consumer, const std::string &content_key,
                               const std::string &what) const {
  const fs::path entry_dir = layout(consumer).entry(content_key);
  const fs::path identity_file = entry_dir / kIdentityFile;
  // meta.json stands for the whole entry: entries are written once, under their key, and a
  // replaced entry has a new meta.json inode.
  bool remembered = false;
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    remembered = entries_.count(entry_dir.string()) != 0;
  }
  if (remembered) {
    if (const auto meta_id = files::identify(entry_dir / kMetaFile)) {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      const auto hit = entries_.find(entry_dir.string());
      if (hit != entries_.end() && hit->second.meta_id == *meta_id) return hit->second;
    }
  }
  // Both files under the artifact's own rules (owner, mode, no symlink), checked on the
  // descriptors their bytes are read from.
  EntryRecords fresh;
  fresh.meta = read_entry_meta(entry_dir, &fresh.meta_id);
  std::string identity_text;
  try {
    identity_text = files::read_store_record(identity_file, files::kMaxJsonFileBytes, nullptr);
  } catch (const NotFoundError &) {
    throw IntegrityError("store entry " + entry_dir.string() + " has no identity.json; republish or rebuild " + what);
  }
  fresh.identity = artifact::parse_artifact_identity(identity_text, identity_file.string());
  if (fresh.meta.content_key != content_key) {
    throw IntegrityError("store entry " + entry_dir.string() + " says content key " + fresh.meta.content_key +
                         " but sits under " + content_key + ": the store was altered; republish or rebuild " + what);
  }
  if (parsed_ == ParsedRecords::forget) return fresh;
  std::lock_guard<std::mutex> lock(cache_mutex_);
  entries_[entry_dir.string()] = fresh;
  return fresh;
}

std::optional<std::string> LocalStore::pointer(const std::string &consumer, const std::string &input_key,
                                               const LogCallback &log) const {
  const fs::path file = layout(consumer).bykey(input_key);
  std::string key;
  try {
    key = files::read_file(file, files::FileOrigin::store, 4096);
  } catch (const NotFoundError &) {
    return std::nullopt;
  } catch (const IntegrityError &error) {  // a FIFO, a device, a huge file: damaged like bad text
    if (log) log(LogLevel::warning, std::string(error.what()) + "; rebuilding");
    return std::nullopt;
  }
  key.erase(std::remove_if(key.begin(), key.end(), [](char c) { return c == '\n' || c == ' '; }), key.end());
  if (!is_valid_key(key)) {
    if (log) log(LogLevel::warning, "bykey pointer " + file.string() + " is damaged; rebuilding");
    return std::nullopt;
  }
  return key;
}

namespace {

// The entry's meta.json when the entry is valid by its own records (its files have the digests
// its meta.json lists, under its own key); nullopt when it is damaged.
std::optional<EntryMeta> valid_entry_meta(const fs::path &entry_dir, const std::string &content_key) {
  try {
    EntryMeta meta = read_entry_meta(entry_dir);
    if (meta.content_key == content_key && entry_files_intact(entry_dir, meta)) return meta;
    return std::nullopt;
  } catch (const IntegrityError &) {
    return std::nullopt;  // damaged: missing, malformed or altered
  } catch (const IncompatibleError &) {
    return std::nullopt;  // another entry layout under this content key is no entry of ours
  }
  // IoError (EACCES, EIO) propagates: an entry kiln cannot read is not known to be damaged, and
  // moving it aside would lose it for readers that can.
}

}  // namespace

bool LocalStore::entry_intact(const std::string &consumer, const std::string &content_key,
                              const std::string &digest) const {
  const auto meta = valid_entry_meta(layout(consumer).entry(content_key), content_key);
  return meta && (digest.empty() || meta->digest == digest);
}

void LocalStore::create_store_directories(const fs::path &dir) const {
  try {
    files::create_directories(dir);
  } catch (const IoError &) {
    throw_if_unwritable(location_);  // the first write of publish, import and build: says the fix
    throw;
  }
}

Staging LocalStore::stage(const std::string &consumer, const LogCallback &log, SweepFirst sweep) const {
  const ConsumerLayout paths = layout(consumer);
  create_store_directories(paths.entries());
  // Before the sweep: in a store others can write, what looks like a dead writer's staging
  // directory may be a trap for it.
  files::check_safe_to_write(paths.entries(), root());
  if (sweep == SweepFirst::already_swept) return Staging(consumer, paths.entries());
  const SweepCounts swept = sweep_leftovers(paths);
  if (swept.total() > 0 && log) {
    log(LogLevel::info, "removed " + std::to_string(swept.staging_dirs) + " staging director(ies) and " +
                            std::to_string(swept.temps) + " temporary file(s) of dead writers in " +
                            paths.dir().string());
  }
  return Staging(consumer, paths.entries());
}

files::FileLock LocalStore::lock_input_key(const std::string &consumer, const std::string &input_key,
                                    const CancelToken *cancel) const {
  const ConsumerLayout paths = layout(consumer);
  create_store_directories(paths.locks());
  const fs::path file = paths.build_lock(input_key);
  if (cancel == nullptr) return files::FileLock(file);
  // Another builder of this key (any process) may hold it for minutes: wait, but not past a cancel.
  for (;;) {
    if (cancel->cancelled()) {
      throw Error(ErrorKind::other, "build of " + consumer + " input key " + input_key +
                                        " cancelled while waiting for another build of the same inputs (holding " +
                                        file.string() + "); nothing was published");
    }
    if (auto lock = files::FileLock::try_acquire_for(file, std::chrono::milliseconds(50))) return std::move(*lock);
  }
}

bool LocalStore::make_room(const Staging &staging, const LogCallback &log, ExistingEntry existing) const {
  const EntryMeta &meta = staging.meta();
  if (!staging.has_records()) throw Error(ErrorKind::other, "internal: committing a staging directory without meta.json");
  const fs::path entry = layout(staging.consumer()).entry(meta.content_key);
  boost::system::error_code error;
  if (!fs::exists(entry, error)) return true;
  if (const auto stored = valid_entry_meta(entry, meta.content_key)) {
    // A valid entry: an older output of the same inputs. The same bytes, or not asked to
    // replace it: kept (the caller removes the staging directory).
    if (stored->digest == meta.digest || existing == ExistingEntry::keep) return false;
    // A forced rebuild wrote other bytes: the toolchain is not reproducible for these inputs.
    // Replaced by a rename, never in place: readers may have the old file mapped.
    const std::string differs = describe_entry_differences(entry, *stored, staging.dir(), meta);
    const fs::path aside = rename_aside(staging.consumer(), meta.content_key, kReplacedSuffix);
    if (log) {
      log(LogLevel::info, "rebuilt: output differs from the stored entry (not reproducible: " +
                              (differs.empty() ? std::string("which bytes is unknown") : differs) + "); " +
                              entry.string() + " replaced, the stored one moved aside to " + aside.string());
    }
  } else {
    // A damaged entry under our key (a torn or altered file) is moved aside, never modified
    // in place and never trusted, so that the fresh copy can take its name. A sweep removes it
    // a day later (a lock-less staging directory, sweep.hpp): time to inspect it.
    move_entry_aside(staging.consumer(), meta.content_key, log);
  }
  return true;
}

bool LocalStore::commit_entry(Staging &&staging, const LogCallback &log, ExistingEntry existing) const {
  Staging owned(std::move(staging));
  if (!make_room(owned, log, existing)) return false;  // owned removes the staging directory
  const bool fresh = commit_staging(owned.dir(), layout(owned.consumer()).entry(owned.meta().content_key));
  owned.release();  // renamed into place, or removed by commit_staging when another writer won
  return fresh;
}

namespace {

// syncfs once per file system holding one of `dirs` (the stagings' store/ directories): usually
// the store root's, but a consumer's directory may be a mount of its own.
void sync_file_systems(const std::set<fs::path> &dirs) {
  std::set<dev_t> synced;
  for (const auto &dir : dirs) {
    struct stat info {};
    if (::stat(dir.c_str(), &info) != 0) files::throw_io("cannot stat", dir, errno);
    if (synced.insert(info.st_dev).second) files::sync_file_system(dir);
  }
}

}  // namespace

std::vector<bool> LocalStore::commit_entries(std::vector<Staging> stagings, const LogCallback &log,
                                             const std::function<void(std::size_t)> &placed) const {
  std::vector<Staging> owned(std::move(stagings));  // what is not renamed is removed on return
  std::vector<bool> fresh(owned.size(), false);
  if (owned.empty()) return fresh;
  std::set<fs::path> dirs;  // where the entries go
  for (const auto &staging : owned) dirs.insert(staging.dir().parent_path());
  // Staged files were written without fsync: one flush of the store's file system makes them
  // all durable before any rename can make one visible (each file's fsync would be a journal
  // commit of its own).
  sync_file_systems(dirs);
  KILN_FAULT_POINT("staging.after_fsync");
  for (std::size_t i = 0; i < owned.size(); ++i) {
    if (make_room(owned[i], log, ExistingEntry::keep)) {
      fresh[i] = place_staging(owned[i].dir(), layout(owned[i].consumer()).entry(owned[i].meta().content_key));
      owned[i].release();  // renamed into place, or removed by place_staging when another writer won
    } else {
      const Staging dropped(std::move(owned[i]));  // the entry there serves: this copy goes now
    }
    if (placed) placed(i);
  }
  // The renames and the staging locks' removals, durable before any pointer or manifest names them.
  sync_file_systems(dirs);
  return fresh;
}

void LocalStore::write_pointer(const std::string &consumer, const std::string &input_key,
                               const std::string &content_key) const {
  if (pointer(consumer, input_key, LogCallback()) == content_key) return;
  const fs::path file = layout(consumer).bykey(input_key);
  files::create_directories(file.parent_path());
  files::check_safe_to_write(file.parent_path(), root());
  files::write_file_atomic(file, content_key + "\n");
}

bool LocalStore::write_record(const std::string &consumer, const std::string &name, const ManifestRecord &record) const {
  return !write_records(consumer, {{name, record}}).empty();
}

std::vector<std::string> LocalStore::write_records(const std::string &consumer,
                                                   const std::map<std::string, ManifestRecord> &records) const {
  const auto same = [&](const Manifest &manifest, const std::string &name, const ManifestRecord &record) {
    const auto it = manifest.artifacts.find(name);
    return it != manifest.artifacts.end() && it->second.content_key == record.content_key &&
           it->second.input_key == record.input_key && it->second.kind == record.kind &&
           it->second.rollback == record.rollback;  // a rollback is said, and unsaid, even over the same entry
  };
  const auto all_same = [&](const Manifest &manifest) {
    for (const auto &[name, record] : records) {
      if (!same(manifest, name, record)) return false;
    }
    return true;
  };
  if (const auto current = manifest(consumer); current && all_same(*current)) return {};  // the hit path writes nothing
  files::create_directories(layout(consumer).dir());
  files::check_safe_to_write(layout(consumer).dir(), root());
  std::vector<std::string> renamed;
  update_manifest(layout(consumer), [&](Manifest &manifest) {
    renamed.clear();
    for (const auto &[name, record] : records) {
      if (same(manifest, name, record)) continue;
      // Under the lock kiln gc evicts under: an entry it evicted since the caller committed or
      // found it is never named.
      const fs::path meta = layout(consumer).entry(record.content_key) / kMetaFile;
      boost::system::error_code error;
      if (!fs::exists(fs::symlink_status(meta, error))) {
        throw NotFoundError("store entry " + meta.parent_path().string() + " was evicted by kiln gc while " +
                            consumer + "/" + name + " was being recorded; run the publish, build or import again");
      }
      const auto it = manifest.artifacts.find(name);
      if (it == manifest.artifacts.end() || it->second.content_key != record.content_key) renamed.push_back(name);
      manifest.artifacts[name] = record;
    }
  });
  return renamed;
}

fs::path LocalStore::rename_aside(const std::string &consumer, const std::string &content_key, const char *suffix) const {
  const ConsumerLayout paths = layout(consumer);
  const fs::path entry = paths.entry(content_key);
  const fs::path aside = paths.entries() / (std::string(kStagingPrefix) + files::unique_suffix() + suffix);
  fs::rename(entry, aside);
  files::fsync_path(paths.entries());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  entries_.erase(entry.string());
  return aside;
}

fs::path LocalStore::move_entry_aside(const std::string &consumer, const std::string &content_key,
                                     const LogCallback &log) const {
  const fs::path aside = rename_aside(consumer, content_key, kDamagedSuffix);
  if (log) {
    log(LogLevel::warning, "store entry " + layout(consumer).entry(content_key).string() + " was damaged; moved aside to " +
                               aside.string());
  }
  return aside;
}

namespace {

std::function<void(Manifest &)> dropping(const std::string &name, const std::string &content_key, bool &dropped) {
  return [&name, &content_key, &dropped](Manifest &manifest) {
    const auto it = manifest.artifacts.find(name);
    if (it == manifest.artifacts.end() || it->second.content_key != content_key) return;
    manifest.artifacts.erase(it);
    dropped = true;
  };
}

}  // namespace

bool LocalStore::drop_record(const std::string &consumer, const std::string &name, const std::string &content_key) const {
  bool dropped = false;
  update_manifest(layout(consumer), dropping(name, content_key, dropped));
  return dropped;
}

bool LocalStore::drop_record_locked(const std::string &consumer, const std::string &name,
                                    const std::string &content_key) const {
  bool dropped = false;
  update_manifest_held(layout(consumer), dropping(name, content_key, dropped));
  return dropped;
}

bool LocalStore::drop_pointer(const std::string &consumer, const std::string &input_key,
                              const std::optional<std::string> &content_key) const {
  const ConsumerLayout paths = layout(consumer);
  bool missing = false;
  const auto lock = files::FileLock::try_acquire_existing(paths.build_lock(input_key), &missing);
  if (!lock && !missing) return false;  // a build of this key is running: it rewrites the pointer
  if (pointer(consumer, input_key, LogCallback()) != content_key) return false;
  boost::system::error_code error;
  fs::remove(paths.bykey(input_key), error);
  if (error) throw IoError("cannot remove " + paths.bykey(input_key).string() + ": " + error.message());
  files::fsync_path(paths.bykey_dir());
  return true;
}

fs::path LocalStore::move_manifest_aside(const std::string &consumer) const {
  const ConsumerLayout paths = layout(consumer);
  files::FileLock lock(paths.manifest_lock());
  const fs::path aside = paths.dir() / ("manifest.json.damaged-" + files::unique_suffix());
  fs::rename(paths.manifest(), aside);
  files::fsync_path(paths.dir());
  std::lock_guard<std::mutex> guard(cache_mutex_);
  manifests_.erase(consumer);
  return aside;
}

}  // namespace kiln::store
