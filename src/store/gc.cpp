// kiln gc on the writable cache (gc.hpp).
//
// One gc at a time (<cache>/gc.lock). Per consumer, under its manifest lock (so a publish or a
// build hit cannot name an entry while it is being evicted: LocalStore::write_record re-checks
// the entry under the same lock): entries not named by the manifest (unless asked), not held
// by a loader (store/use_lock.hpp), in least-recently-used order across the whole cache, are
// renamed out of store/ in one step -- a crash after that leaves a staging directory the sweep
// removes -- then removed, with the bykey pointers and use markers naming them. Object-cache
// files are plain caches (a builder checks an object's digest before using it): unlinked.
#include "store/gc.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <set>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "store/files.hpp"
#include "store/remove_tree.hpp"
#include "store/sweep.hpp"
#include "support/fault_point.hpp"
#include "support/text.hpp"
#include "store/names.hpp"
#include "store/unique_fd.hpp"
#include "store/usage.hpp"
#include "store/use_lock.hpp"

namespace kiln::store {
namespace {

struct Candidate {
  GcItem item;
  bool named = false;
  std::string name;  // the manifest's name for it (named entries)
  std::vector<std::string> input_keys;  // bykey pointers naming it
};

bool is_real_directory(const fs::path &path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// Bytes of the regular files of an entry, its gen/ directory (a build's generated sources) included.
std::uint64_t entry_bytes(const fs::path &dir) {
  std::uint64_t bytes = 0;
  boost::system::error_code error;
  for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) == 0 && S_ISREG(info.st_mode)) bytes += static_cast<std::uint64_t>(info.st_size);
  }
  return bytes;
}

std::time_t mtime_of(const fs::path &path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 ? info.st_mtime : 0;
}

// Every file of the entry locked exclusively, or nullopt when one is held by a loader.
std::optional<std::vector<std::unique_ptr<UniqueFd>>> lock_entry_files(const fs::path &dir) {
  std::vector<std::unique_ptr<UniqueFd>> held;
  for (const auto &name : names_in(dir)) {
    auto fd = std::make_unique<UniqueFd>(::open((dir / name).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (fd->get() < 0) continue;  // not a file we can open: nothing can have loaded it either
    struct stat info {};
    if (::fstat(fd->get(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    if (!lock_unused(fd->get())) return std::nullopt;
    held.push_back(std::move(fd));
  }
  return held;
}

class Collector {
 public:
  Collector(const LocalStore &cache, const GcOptions &options, GcReport &report, const LogCallback &log)
      : cache_(cache), options_(options), report_(report), log_(log), now_(std::time(nullptr)) {}

  void run() {
    const fs::path consumers = cache_.root() / "consumers";
    std::vector<Candidate> all;
    for (const auto &name : names_in(consumers)) {
      if (is_valid_name(name) && is_real_directory(consumers / name)) survey(name, all);
    }
    report_.bytes_before = 0;
    for (const auto &candidate : all) report_.bytes_before += candidate.item.bytes;
    std::stable_sort(all.begin(), all.end(),
                     [](const Candidate &a, const Candidate &b) { return a.item.last_used < b.item.last_used; });
    std::uint64_t total = report_.bytes_before;
    for (auto &candidate : all) {
      const bool over_cap = options_.max_bytes && total > *options_.max_bytes;
      const bool too_old = options_.older_than && now_ - candidate.item.last_used > options_.older_than->count();
      if (!over_cap && !too_old) continue;
      if (candidate.named && !options_.include_named) {
        candidate.item.outcome = "kept: named";
      } else if (options_.dry_run) {
        candidate.item.outcome = "would evict";
      } else {
        candidate.item.outcome = candidate.item.kind == "entry" ? evict_entry(candidate) : evict_object(candidate);
      }
      const bool gone = candidate.item.outcome == "evicted" || candidate.item.outcome == "would evict";
      if (gone) {
        total -= candidate.item.bytes;
        (candidate.item.kind == "entry" ? report_.entries_evicted : report_.objects_evicted) += 1;
      }
      report_.items.push_back(candidate.item);
    }
    report_.bytes_after = total;
  }

 private:
  void survey(const std::string &consumer, std::vector<Candidate> &all) {
    const ConsumerLayout layout = cache_.layout(consumer);
    std::map<std::string, std::string> named;  // content key -> name
    try {
      if (const auto manifest = cache_.manifest(consumer)) {
        for (const auto &[name, record] : manifest->artifacts) named[record.content_key] = name;
      }
    } catch (const std::exception &error) {
      // What it names cannot be told: none of its entries is evicted (kiln verify says more).
      if (log_) log_(LogLevel::warning, "kiln gc: skipping the entries of " + consumer + ": " + error.what());
      return;
    }
    std::map<std::string, std::vector<std::string>> pointers;  // content key -> input keys
    for (const auto &input_key : names_in(layout.bykey_dir())) {
      if (!is_valid_key(input_key)) continue;
      if (const auto key = cache_.pointer(consumer, input_key, LogCallback())) pointers[*key].push_back(input_key);
    }
    for (const auto &key : names_in(layout.entries())) {
      if (support::starts_with(key, kStagingPrefix) && support::ends_with(key, kEvictedSuffix)) {
        // What a gc killed after the rename left (only a gc, holding gc.lock, makes these).
        if (!options_.dry_run) remove_tree(layout.entries() / key);
        continue;
      }
      if (!is_valid_key(key)) continue;
      const fs::path dir = layout.entry(key);
      if (!is_real_directory(dir)) continue;
      ++report_.entries_seen;
      Candidate candidate;
      candidate.item.kind = "entry";
      candidate.item.consumer = consumer;
      candidate.item.path = dir.string();
      candidate.item.content_key = key;
      candidate.item.bytes = entry_bytes(dir);
      candidate.item.last_used = std::max<std::int64_t>(mtime_of(dir / kMetaFile), recorded_use(layout, key).value_or(0));
      const auto name = named.find(key);
      candidate.named = name != named.end();
      if (candidate.named) candidate.name = name->second;
      if (const auto found = pointers.find(key); found != pointers.end()) candidate.input_keys = found->second;
      all.push_back(std::move(candidate));
    }
    for (const auto &file : names_in(layout.objects())) {
      const fs::path path = layout.objects() / file;
      struct stat info {};
      if (file.empty() || file[0] == '.' || file.size() < 3 || file.compare(file.size() - 2, 2, ".o") != 0 ||
          ::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
        continue;  // temps (the sweep's) and digests (go with their object)
      }
      ++report_.objects_seen;
      Candidate candidate;
      candidate.item.kind = "object";
      candidate.item.consumer = consumer;
      candidate.item.path = path.string();
      struct stat digest {};
      const bool has_digest = ::lstat((path.string() + ".digest").c_str(), &digest) == 0 && S_ISREG(digest.st_mode);
      candidate.item.bytes = static_cast<std::uint64_t>(info.st_size) +
                             (has_digest ? static_cast<std::uint64_t>(digest.st_size) : 0);
      candidate.item.last_used = info.st_mtime;
      all.push_back(std::move(candidate));
    }
  }

  std::string evict_entry(const Candidate &candidate) {
    const ConsumerLayout layout = cache_.layout(candidate.item.consumer);
    const fs::path dir(candidate.item.path);
    try {
      FileLock manifest_lock(layout.manifest_lock());
      // Named meanwhile (a publish or build since the survey)? Then it stays unless asked.
      const auto manifest = cache_.manifest(candidate.item.consumer);
      std::string name_now;
      if (manifest) {
        for (const auto &[name, record] : manifest->artifacts) {
          if (record.content_key == candidate.item.content_key) name_now = name;
        }
      }
      if (!name_now.empty() && !options_.include_named) return "kept: named";
      auto held = lock_entry_files(dir);
      if (!held) return "kept: in use";
      if (!name_now.empty()) cache_.drop_record_locked(candidate.item.consumer, name_now, candidate.item.content_key);
      const fs::path aside = layout.entries() / (std::string(kStagingPrefix) + unique_suffix() + kEvictedSuffix);
      fs::rename(dir, aside);
      fsync_path(layout.entries());
      KILN_FAULT_POINT("gc.after_rename");
      held->clear();
      remove_tree(aside);  // a crash before this: the sweep removes it
      boost::system::error_code error;
      fs::remove(use_marker(layout, candidate.item.content_key), error);
    } catch (const std::exception &error) {
      if (log_) log_(LogLevel::warning, "kiln gc: cannot evict " + dir.string() + ": " + error.what());
      return std::string("kept: ") + error.what();
    }
    for (const auto &input_key : candidate.input_keys) {
      try {
        cache_.drop_pointer(candidate.item.consumer, input_key, candidate.item.content_key);
      } catch (const std::exception &) {
        // a dangling pointer is rebuilt over (kiln verify lists it)
      }
    }
    return "evicted";
  }

  std::string evict_object(const Candidate &candidate) {
    boost::system::error_code error;
    fs::remove(candidate.item.path, error);
    if (error) return "kept: " + error.message();
    fs::remove(candidate.item.path + ".digest", error);
    return "evicted";
  }

  const LocalStore &cache_;
  const GcOptions &options_;
  GcReport &report_;
  const LogCallback &log_;
  std::time_t now_;
};

}  // namespace

GcReport collect_garbage(const LocalStore &cache, const GcOptions &options, const LogCallback &log) {
  if (!options.max_bytes && !options.older_than) {
    throw UsageError("kiln gc needs a limit: --max-size SIZE (e.g. 2G) and/or --older-than AGE (e.g. 30d)");
  }
  GcReport report;
  report.cache = cache.root().string();
  if (!is_real_directory(cache.root())) return report;  // nothing cached yet
  const auto lock = FileLock::try_acquire(cache.root() / "gc.lock");
  if (!lock) throw IoError("another kiln gc is running on " + cache.root().string() + "; wait for it to finish");
  Collector(cache, options, report, log).run();
  // What a crashed or failed writer of the ABI header copies left (the same rule a build's own
  // sweep applies): removed even when no entry is.
  if (!options.dry_run) sweep_abi_leftovers(cache.root() / "abi");
  return report;
}

}  // namespace kiln::store
