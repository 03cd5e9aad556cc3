// kiln verify on one store directory (audit.hpp). Per consumer: the directory's safety, the
// manifest, every entry (records, permissions, digests: the readers a load uses), the bykey
// pointers, then what references what (missing entries, dangling pointers, orphans) and the
// leftovers of dead writers. Repairs go through LocalStore's primitives, each under the lock
// its writers take, and never delete what could still be inspected: a damaged entry or
// manifest is moved aside.
//
// Memory stays flat however large the store: each finding goes to the caller once final, and
// per entry only its packed key and a few flags are held (about 20 bytes), sorted for lookup.
#include "store/maintenance/audit.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>

#include "files/files.hpp"
#include "store/names.hpp"
#include "files/safety.hpp"
#include "store/sweep.hpp"
#include "support/fault_point.hpp"
#include "support/text.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

using support::ends_with;
using support::starts_with;

// Why a directory inside the store breaks the store's rules, or "" when it does not.
std::string unsafe_directory(const fs::path &dir) {
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0) return "";
  if (S_ISLNK(info.st_mode)) return "a symbolic link inside the store; replace it with the directory itself";
  if (!S_ISDIR(info.st_mode)) return "not a directory";
  if (info.st_uid != ::geteuid() && info.st_uid != 0) {
    return "owned by uid " + std::to_string(info.st_uid) + ", not this user or root; chown it";
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) return "writable by group or others; chmod go-w it";
  return "";
}

enum class EntryState : std::uint8_t { unchecked, intact, damaged, unreadable };

// EntryMark::kind of an entry whose kind is past the names a byte can index (a hostile store of
// many made-up kinds): read again from its meta.json when it is compared.
constexpr std::uint8_t kKindNotKept = 255;

// What the cross-checks need of one entry of the consumer being audited.
struct EntryMark {
  PackedKey key;
  EntryState state = EntryState::unchecked;  // until entries() checks it
  std::uint8_t kind = 0;  // index into Auditor::kinds_, or kKindNotKept (intact entries)
  bool referenced = false;
};

// The consumer's entries, sorted by key.
class EntryMarks {
 public:
  void add(const PackedKey &key) { marks_.push_back({key}); }
  void sort() { std::sort(marks_.begin(), marks_.end(), [](const EntryMark &a, const EntryMark &b) { return a.key < b.key; }); }
  std::vector<EntryMark> &all() { return marks_; }
  EntryMark *find(const std::string &key) {
    const auto packed = pack_key(key);
    if (!packed) return nullptr;
    const auto it = std::lower_bound(marks_.begin(), marks_.end(), *packed,
                                     [](const EntryMark &mark, const PackedKey &wanted) { return mark.key < wanted; });
    return it != marks_.end() && it->key == *packed ? &*it : nullptr;
  }

 private:
  std::vector<EntryMark> marks_;
};

class Auditor {
 public:
  Auditor(const LocalStore &store, bool repair, VerifyReport &report, const FindingCallback &on_finding,
          const LogCallback &log, const EntryFileCheck &check)
      : store_(store), repair_(repair), report_(report), on_finding_(on_finding), log_(log), check_(check) {}

  void run() {
    const fs::path consumers = store_.root() / "consumers";
    boost::system::error_code error;
    if (!fs::exists(fs::symlink_status(consumers, error))) return;  // an empty store
    check_directory(consumers, "");
    for (fs::directory_iterator it(consumers, error), end; !error && it != end; it.increment(error)) {
      const std::string name = it->path().filename().string();
      if (!is_valid_name(name)) {
        add("foreign_file", "info", "", it->path(), "not a consumer name kiln writes; left alone");
        continue;
      }
      if (!check_directory(it->path(), name)) continue;
      ++report_.consumers;
      consumer(name);
    }
    if (error) add("unreadable", "damage", "", consumers, "cannot list it: " + error.message());
    flush();
    abi_leftovers_of_builds();
  }

 private:
  // A finding waits in pending_ until its repair is done (an index into it stays valid until
  // the next flush), then goes to the sink.
  std::size_t add(const std::string &kind, const std::string &severity, const std::string &consumer,
                  const fs::path &path, const std::string &detail) {
    StoreFinding finding;
    finding.kind = kind;
    finding.severity = severity;
    finding.store = store_.root().string();
    finding.consumer = consumer;
    finding.path = path.string();
    finding.detail = detail;
    pending_.push_back(std::move(finding));
    return pending_.size() - 1;
  }

  void emit(StoreFinding &&finding) {
    (finding.severity == "damage" ? report_.damage : finding.severity == "stale" ? report_.stale : report_.info) += 1;
    report_.repaired += finding.repaired ? 1 : 0;
    report_.damage_left += finding.severity == "damage" && !finding.repaired ? 1 : 0;
    if (on_finding_) {
      on_finding_(finding);
    } else {
      report_.findings.push_back(std::move(finding));
    }
  }

  void flush() {
    for (auto &finding : pending_) emit(std::move(finding));
    pending_.clear();
  }

  // Runs `fix` (which says what it did) when repairs are asked for and allowed here.
  template <typename Fix>
  void repair(std::size_t index, Fix fix) {
    if (!repair_) return;
    if (!store_.writable()) {
      pending_[index].repair = "read-only layer: not repaired";
      return;
    }
    try {
      std::string done = fix();
      StoreFinding &now = pending_[index];
      now.repaired = !done.empty();
      now.repair = now.repaired ? done : "busy: a live writer holds it; left in place";
    } catch (const std::exception &error) {
      pending_[index].repair = std::string("failed: ") + error.what();
    }
  }

  // False when the directory is not one to walk into (a symlink, not a directory).
  bool check_directory(const fs::path &dir, const std::string &consumer) {
    const std::string why = unsafe_directory(dir);
    if (why.empty()) return true;
    add("unsafe_permissions", "damage", consumer, dir, why);
    return why.find("symbolic link") == std::string::npos && why != "not a directory";
  }

  void consumer(const std::string &name) {
    const ConsumerLayout layout = store_.layout(name);
    std::shared_ptr<const Manifest> manifest;
    try {
      files::check_store_file_safe(layout.manifest().string(), &ignored_);
    } catch (const NotFoundError &) {
    } catch (const IntegrityError &error) {
      add("unsafe_permissions", "damage", name, layout.manifest(), error.what());
    } catch (const std::exception &) {
    }
    try {
      manifest = store_.manifest(name);
    } catch (const IoError &error) {
      add("unreadable", "damage", name, layout.manifest(), error.what());
    } catch (const std::exception &error) {  // IntegrityError, IncompatibleError
      const std::size_t index = add("damaged_manifest", "damage", name, layout.manifest(), error.what());
      repair(index, [&] {
        const fs::path aside = store_.move_manifest_aside(name);
        KILN_FAULT_POINT("repair.after_manifest_aside");
        return "moved aside to " + aside.string();
      });
    }

    flush();

    // The names of each content key, so that the repair of a damaged entry drops its records at
    // once (its finding is then final and goes to the caller at once).
    std::vector<std::pair<PackedKey, const std::string *>> names_of;
    if (manifest) {
      for (const auto &[artifact, record] : manifest->artifacts) {
        if (const auto key = pack_key(record.content_key)) names_of.emplace_back(*key, &artifact);
      }
      std::sort(names_of.begin(), names_of.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    }
    EntryMarks marks;
    entries(layout, marks, names_of);

    if (manifest) {
      for (const auto &named : manifest->artifacts) {
        const std::string &artifact = named.first;  // not a structured binding: lambdas below capture it
        const ManifestRecord &record = named.second;
        EntryMark *mark = marks.find(record.content_key);
        if (mark) mark->referenced = true;
        if (!mark) {
          const std::size_t index =
              add("missing_entry", "damage", name, layout.entry(record.content_key),
                  "the manifest names " + name + "/" + artifact + " as " + record.content_key +
                      ", which has no entry; republish or rebuild it");
          repair(index, [&] {
            if (!store_.drop_record(name, artifact, record.content_key)) return "";
            KILN_FAULT_POINT("repair.after_drop_record");
            return "record dropped";
          });
        } else if (mark->state == EntryState::intact && !record.kind.empty()) {
          // A load refuses the name (store/storage.cpp) when the record and its entry disagree.
          const auto held = kind_of(layout, *mark);
          if (held && *held != record.kind) {
            add("mismatched_record", "damage", name, layout.manifest(),
                "the manifest names " + name + "/" + artifact + " as a \"" + record.kind + "\" artifact, but entry " +
                    record.content_key + " holds a \"" + *held + "\" one; republish or rebuild " + artifact);
          }
        }
        flush();
      }
    }
    pointers(layout, marks);
    for (const auto &mark : marks.all()) {
      if (mark.state == EntryState::intact && !mark.referenced) {
        add("orphan_entry", "info", name, layout.entry(unpack_key(mark.key)),
            "no manifest record or bykey pointer names it (kiln gc evicts such entries)");
        flush();
      }
    }
    leftovers(layout);
  }

  void entries(const ConsumerLayout &layout, EntryMarks &marks,
               const std::vector<std::pair<PackedKey, const std::string *>> &names_of) {
    const fs::path dir = layout.entries();
    boost::system::error_code error;
    if (!fs::exists(fs::symlink_status(dir, error)) || !check_directory(dir, layout.consumer())) return flush();
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      const std::string name = it->path().filename().string();
      if (starts_with(name, kStagingPrefix)) continue;  // leftovers(): judged by their locks
      const auto key = pack_key(name);
      if (!key) {
        add("foreign_file", "info", layout.consumer(), it->path(), "not a content key; left alone");
        continue;
      }
      marks.add(*key);
    }
    if (error) add("unreadable", "damage", layout.consumer(), dir, "cannot list it: " + error.message());
    flush();
    marks.sort();
    for (auto &mark : marks.all()) {
      const std::string key = unpack_key(mark.key);
      mark.state = entry(layout, key, mark.kind);
      if (mark.state == EntryState::damaged) {
        const std::size_t index = pending_.size() - 1;  // entry() added it last
        repair(index, [&] {
          const fs::path aside = store_.move_entry_aside(layout.consumer(), key, log_);
          KILN_FAULT_POINT("repair.after_move_aside");
          std::string done = "moved aside to " + aside.string();
          const auto first = std::lower_bound(names_of.begin(), names_of.end(), mark.key,
                                              [](const auto &named, const PackedKey &wanted) { return named.first < wanted; });
          for (auto it = first; it != names_of.end() && it->first == mark.key; ++it) {
            if (!store_.drop_record(layout.consumer(), *it->second, key)) continue;
            KILN_FAULT_POINT("repair.after_drop_record");
            done += "; manifest record " + *it->second + " dropped";
          }
          return done;
        });
      }
      flush();
    }
  }

  EntryState entry(const ConsumerLayout &layout, const std::string &key, std::uint8_t &kind) {
    const fs::path dir = layout.entry(key);
    const std::string consumer = layout.consumer();
    if (!check_directory(dir, consumer)) return EntryState::unreadable;
    ++report_.entries;
    // Permissions first: whoever can write meta.json can make altered code match its digest, so
    // such an entry is neither judged intact nor moved aside here; a person decides.
    const auto unsafe = [&](const fs::path &file, bool code) {
      struct stat info {};
      if (::lstat(file.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) return false;  // altered: damage, below
      try {
        if (code) {
          files::check_file_safe(file.string(), &ignored_);
        } else {
          files::check_store_file_safe(file.string(), &ignored_);
        }
      } catch (const IntegrityError &error) {
        add("unsafe_permissions", "damage", consumer, file, error.what());
        return true;
      } catch (const std::exception &) {
        // absent or unreadable: the readers below say so
      }
      return false;
    };
    if (unsafe(dir / kMetaFile, false) || unsafe(dir / kIdentityFile, false)) return EntryState::unreadable;
    EntryRecords records;
    try {
      records = store_.entry(consumer, key, consumer + " entry " + key);
    } catch (const IoError &error) {
      add("unreadable", "damage", consumer, dir, error.what());
      return EntryState::unreadable;
    } catch (const std::exception &error) {  // IntegrityError, IncompatibleError
      add("damaged_entry", "damage", consumer, dir, error.what());
      return EntryState::damaged;
    }
    const EntryMeta &meta = records.meta;
    bool unsafe_files = unsafe(dir / meta.file, meta.kind == kKindPlugin);
    for (const auto &image : meta.images) unsafe_files = unsafe(dir / image.file, false) || unsafe_files;
    if (unsafe_files) return EntryState::unreadable;
    try {
      if (!entry_files_intact(dir, meta)) {
        add("damaged_entry", "damage", consumer, dir,
            "a file it lists is missing or its bytes differ from its recorded digest; kiln rebuilds or republishes "
            "over it once it is moved aside (kiln verify --repair)");
        return EntryState::damaged;
      }
    } catch (const std::exception &error) {
      add("unreadable", "damage", consumer, dir, error.what());
      return EntryState::unreadable;
    }
    // What a load would refuse besides digests (a plugin whose build stamp names another entry).
    if (check_) {
      std::string why;
      try {
        why = check_(dir, meta);
      } catch (const IoError &error) {
        add("unreadable", "damage", consumer, dir, error.what());
        return EntryState::unreadable;
      } catch (const std::exception &error) {
        why = error.what();
      }
      if (!why.empty()) {
        add("damaged_entry", "damage", consumer, dir, why + "; a load refuses it (kiln verify --repair moves it aside)");
        return EntryState::damaged;
      }
    }
    kind = kind_index(meta.kind);
    report_.files += 1 + meta.images.size();
    report_.bytes += meta.size;
    for (const auto &image : meta.images) report_.bytes += image.size;
    return EntryState::intact;
  }

  void pointers(const ConsumerLayout &layout, EntryMarks &marks) {
    const fs::path dir = layout.bykey_dir();
    boost::system::error_code error;
    if (!fs::exists(fs::symlink_status(dir, error)) || !check_directory(dir, layout.consumer())) return flush();
    std::vector<PackedKey> input_keys;  // listed first: a repair removes pointers
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      const std::string name = it->path().filename().string();
      if (starts_with(name, ".")) continue;  // atomic-write temps: leftovers()
      const auto input_key = pack_key(name);
      if (!input_key) {
        add("foreign_file", "info", layout.consumer(), it->path(), "not an input key; left alone");
        continue;
      }
      input_keys.push_back(*input_key);
    }
    flush();
    std::sort(input_keys.begin(), input_keys.end());
    for (const auto &packed : input_keys) {
      const std::string input_key = unpack_key(packed);
      const auto key = store_.pointer(layout.consumer(), input_key, LogCallback());
      EntryMark *mark = key ? marks.find(*key) : nullptr;
      if (mark) mark->referenced = true;
      const bool present = mark != nullptr;
      if (present && mark->state != EntryState::damaged) continue;
      const std::size_t index = add(
          "dangling_pointer", "stale", layout.consumer(), layout.bykey(input_key),
          key ? "points at " + *key + ", which is " + (present ? "damaged" : "not in the store") +
                    "; the next build of these inputs rebuilds it"
              : "damaged (not one content key); the next build of these inputs rebuilds over it");
      repair(index, [&] {
        if (!store_.drop_pointer(layout.consumer(), input_key, key)) return "";
        KILN_FAULT_POINT("repair.after_drop_pointer");
        return "removed";
      });
      flush();
    }
  }

  // Staging directories of dead writers and damaged entries moved aside, atomic-write temps:
  // listed, then (repair) swept by the writers' own sweep with its graces; what it keeps is said.
  void leftovers(const ConsumerLayout &layout) {
    std::vector<std::size_t> found;
    boost::system::error_code error;
    for (fs::directory_iterator it(layout.entries(), error), end; !error && it != end; it.increment(error)) {
      const std::string name = it->path().filename().string();
      if (!starts_with(name, kStagingPrefix)) continue;
      bool missing = false;
      const auto lock = files::FileLock::try_acquire_existing(it->path() / kStagingLockFile, &missing);
      if (!lock && !missing) continue;  // a live writer's
      found.push_back(add("staging_leftover", "stale", layout.consumer(), it->path(),
                          ends_with(name, kDamagedSuffix)    ? "a damaged entry moved aside (kept a day for inspection)"
                          : ends_with(name, kReplacedSuffix) ? "an entry a forced rebuild replaced (kept a day: readers may still map it)"
                                                             : "the staging directory of a writer that died"));
    }
    const auto temps_in = [&](const fs::path &dir) {
      boost::system::error_code list_error;
      for (fs::directory_iterator it(dir, list_error), end; !list_error && it != end; it.increment(list_error)) {
        const std::string name = it->path().filename().string();
        if (name.find(".tmp-") == std::string::npos || !starts_with(name, ".")) continue;
        found.push_back(add("temp_leftover", "stale", layout.consumer(), it->path(),
                            "an atomic-write temp (of a writer that died, or one writing right now)"));
      }
    };
    temps_in(layout.dir());
    temps_in(layout.bykey_dir());
    temps_in(layout.objects());
    swept_by(found, [&] { sweep_leftovers(layout); });
  }

  // <root>/abi, the plugin ABI headers builds include: a writer's staging copy left by a crash
  // or a full disk, a damaged copy moved aside.
  void abi_leftovers_of_builds() {
    std::vector<std::size_t> found;
    for (const auto &leftover : abi_leftovers(store_.root() / "abi")) {
      found.push_back(add("staging_leftover", "stale", "", leftover.path,
                          leftover.damaged ? "ABI headers moved aside as damaged (kept a day: a compile may read them)"
                                           : "the ABI headers' staging copy of a writer that died or failed"));
    }
    swept_by(found, [&] { sweep_abi_leftovers(store_.root() / "abi"); });
  }

  // With --repair in a writable store: runs the writers' own sweep and says of each finding
  // whether it went.
  template <class Sweep>
  void swept_by(const std::vector<std::size_t> &found, Sweep sweep) {
    if (found.empty() || !repair_) return flush();
    if (!store_.writable()) {
      for (const std::size_t index : found) pending_[index].repair = "read-only layer: not repaired";
      return flush();
    }
    sweep();
    for (const std::size_t index : found) {
      StoreFinding &finding = pending_[index];
      boost::system::error_code gone;
      finding.repaired = !fs::exists(fs::symlink_status(finding.path, gone));
      finding.repair = finding.repaired ? "removed"
                                        : "kept: younger than the sweep's grace (a day for staging directories "
                                          "without a lock or damaged copies, a minute for temps and staging "
                                          "copies), a live writer's, or another user's";
    }
    flush();
  }

  std::uint8_t kind_index(const std::string &kind) {
    const auto it = std::find(kinds_.begin(), kinds_.end(), kind);
    if (it != kinds_.end()) return static_cast<std::uint8_t>(it - kinds_.begin());
    if (kinds_.size() == kKindNotKept) return kKindNotKept;
    kinds_.push_back(kind);
    return static_cast<std::uint8_t>(kinds_.size() - 1);
  }

  // The kind of an intact entry; nullopt when it cannot be read again (changed since checked).
  std::optional<std::string> kind_of(const ConsumerLayout &layout, const EntryMark &mark) const {
    if (mark.kind != kKindNotKept) return kinds_[mark.kind];
    try {
      return store_.entry(layout.consumer(), unpack_key(mark.key), layout.consumer()).meta.kind;
    } catch (const std::exception &) {
      return std::nullopt;
    }
  }

  const LocalStore &store_;
  bool repair_;
  VerifyReport &report_;
  const FindingCallback &on_finding_;
  const LogCallback &log_;
  const EntryFileCheck &check_;
  std::vector<StoreFinding> pending_;                           // found, repair not yet done
  std::vector<std::string> kinds_{"", kKindPlugin, kKindImages};     // EntryMark::kind's names
  files::FileIdentity ignored_;
};

}  // namespace

void audit_store(const LocalStore &store, bool repair, VerifyReport &report, const FindingCallback &on_finding,
                 const LogCallback &log, const EntryFileCheck &check) {
  report.stores.push_back(store.root().string());
  const LocalStore walker(store.location(), ParsedRecords::forget);
  Auditor(walker, repair, report, on_finding, log, check).run();
}

}  // namespace kiln::store
