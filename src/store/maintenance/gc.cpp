// kiln gc on the writable cache (gc.hpp).
//
// One gc at a time (<cache>/gc.lock). Per consumer, under its manifest lock (so a publish or a
// build hit cannot name an entry while it is being evicted: LocalStore::write_record re-checks
// the entry under the same lock): entries not named by the manifest (unless asked), not held
// by a loader (store/maintenance/use_lock.hpp), in least-recently-used order across the whole cache, are
// renamed out of store/ in one step -- a crash after that leaves a staging directory the sweep
// removes -- then removed, with the bykey pointers and use markers naming them. Object-cache
// files are plain caches (a builder checks an object's digest before using it): unlinked.
//
// Memory stays flat however large the cache: each candidate is held as 32 bytes (packed key,
// size, last use, consumer), each item goes to the caller as its outcome is known, and the bykey
// pointers of evicted entries are found afterwards by one walk of the consumer's bykey/.
#include "store/maintenance/gc.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "files/files.hpp"
#include "files/remove_tree.hpp"
#include "store/sweep.hpp"
#include "support/fault_point.hpp"
#include "support/text.hpp"
#include "store/names.hpp"
#include "files/unique_fd.hpp"
#include "store/maintenance/usage.hpp"
#include "store/maintenance/use_lock.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

// One entry or object file. Objects carry their file name's offset in Collector's name pool.
struct Candidate {
  union {
    PackedKey key;             // entries: the content key
    std::uint32_t name_offset; // objects
  };
  std::uint64_t bytes = 0;
  std::uint32_t last_used = 0;  // seconds since the epoch (till 2106)
  std::uint32_t consumer : 24;  // index into Collector::consumers_
  std::uint32_t is_object : 1;
  std::uint32_t named : 1;
};
static_assert(sizeof(Candidate) == 32, "a candidate is held per entry: keep it small");

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
std::optional<std::vector<std::unique_ptr<files::UniqueFd>>> lock_entry_files(const fs::path &dir) {
  std::vector<std::unique_ptr<files::UniqueFd>> held;
  for (const auto &name : files::names_in(dir)) {
    auto fd = std::make_unique<files::UniqueFd>(::open((dir / name).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
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
    for (const auto &name : files::names_in(consumers)) {
      if (!is_valid_name(name) || !is_real_directory(consumers / name)) continue;
      if (consumers_.size() >= (1u << 24)) break;  // Candidate::consumer's range; never reached
      consumers_.push_back(name);
    }
    // Every manifest first, while no candidate is held: a large manifest's reading then never
    // adds to the candidates' memory.
    std::vector<std::optional<std::vector<PackedKey>>> named;
    for (const auto &consumer : consumers_) named.push_back(named_keys(consumer));
    evicted_.resize(consumers_.size());
    std::deque<Candidate> all;  // grows without copying: no doubling peak
    for (std::uint32_t c = 0; c < consumers_.size(); ++c) {
      if (named[c]) survey(c, *named[c], all);
    }
    report_.bytes_before = 0;
    for (const auto &candidate : all) report_.bytes_before += candidate.bytes;
    // Least recently used first; ties in the order surveyed (consumer, entries before objects, name).
    std::sort(all.begin(), all.end(), [this](const Candidate &a, const Candidate &b) {
      if (a.last_used != b.last_used) return a.last_used < b.last_used;
      if (a.consumer != b.consumer) return a.consumer < b.consumer;
      if (a.is_object != b.is_object) return a.is_object < b.is_object;
      return a.is_object ? std::strcmp(object_name(a), object_name(b)) < 0 : a.key < b.key;
    });
    std::uint64_t total = report_.bytes_before;
    for (const auto &candidate : all) {
      const bool over_cap = options_.max_bytes && total > *options_.max_bytes;
      const bool too_old = options_.older_than && now_ - candidate.last_used > options_.older_than->count();
      if (!over_cap && !too_old) continue;
      GcItem item = describe(candidate);
      if (candidate.named && !options_.include_named) {
        item.outcome = "kept: named";
      } else if (options_.dry_run) {
        item.outcome = "would evict";
      } else {
        item.outcome = candidate.is_object ? evict_object(item) : evict_entry(item);
      }
      const bool gone = item.outcome == "evicted" || item.outcome == "would evict";
      if (gone) {
        total -= candidate.bytes;
        (candidate.is_object ? report_.objects_evicted : report_.entries_evicted) += 1;
        if (!options_.dry_run && !candidate.is_object) evicted_[candidate.consumer].push_back(candidate.key);
      }
      if (options_.on_item) {
        options_.on_item(item);
      } else {
        report_.items.push_back(std::move(item));
      }
    }
    report_.bytes_after = total;
    for (std::size_t c = 0; c < consumers_.size(); ++c) drop_pointers(consumers_[c], evicted_[c]);
  }

 private:
  // The content keys the consumer's manifest names, sorted; nullopt when what it names cannot
  // be told (then none of its entries is evicted; kiln verify says more).
  std::optional<std::vector<PackedKey>> named_keys(const std::string &consumer) {
    std::vector<PackedKey> named;
    try {
      if (const auto manifest = cache_.manifest(consumer)) {
        for (const auto &record : manifest->artifacts) {
          if (const auto key = pack_key(record.second.content_key)) named.push_back(*key);
        }
      }
    } catch (const std::exception &error) {
      if (log_) log_(LogLevel::warning, "kiln gc: skipping the entries of " + consumer + ": " + error.what());
      return std::nullopt;
    }
    std::sort(named.begin(), named.end());
    return named;
  }

  void survey(std::uint32_t consumer_index, const std::vector<PackedKey> &named, std::deque<Candidate> &all) {
    const std::string &consumer = consumers_[consumer_index];
    const ConsumerLayout layout = cache_.layout(consumer);
    files::for_each_name(layout.entries(), [&](const std::string &name) {
      if (support::starts_with(name, kStagingPrefix) && support::ends_with(name, kEvictedSuffix)) {
        // What a gc killed after the rename left (only a gc, holding gc.lock, makes these).
        if (!options_.dry_run) files::remove_tree(layout.entries() / name);
        return;
      }
      const auto key = pack_key(name);
      const fs::path dir = layout.entries() / name;
      if (!key || !is_real_directory(dir)) return;
      ++report_.entries_seen;
      Candidate candidate{};
      candidate.key = *key;
      candidate.consumer = consumer_index & 0xffffffu;
      candidate.bytes = entry_bytes(dir);
      candidate.last_used = epoch_seconds(std::max<std::int64_t>(mtime_of(dir / kMetaFile), recorded_use(layout, name).value_or(0)));
      candidate.named = std::binary_search(named.begin(), named.end(), *key);
      all.push_back(candidate);
    });
    files::for_each_name(layout.objects(), [&](const std::string &file) {
      const fs::path path = layout.objects() / file;
      struct stat info {};
      if (file.empty() || file[0] == '.' || file.size() < 3 || file.compare(file.size() - 2, 2, ".o") != 0 ||
          ::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
        return;  // temps (the sweep's) and digests (go with their object)
      }
      ++report_.objects_seen;
      Candidate candidate{};
      candidate.name_offset = static_cast<std::uint32_t>(object_names_.size());
      object_names_.append(file).push_back('\0');
      candidate.is_object = 1;
      candidate.consumer = consumer_index & 0xffffffu;
      struct stat digest {};
      const bool has_digest = ::lstat((path.string() + ".digest").c_str(), &digest) == 0 && S_ISREG(digest.st_mode);
      candidate.bytes = static_cast<std::uint64_t>(info.st_size) + (has_digest ? static_cast<std::uint64_t>(digest.st_size) : 0);
      candidate.last_used = epoch_seconds(info.st_mtime);
      all.push_back(candidate);
    });
  }

  static std::uint32_t epoch_seconds(std::int64_t time) {
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(time, 0, std::numeric_limits<std::uint32_t>::max()));
  }

  const char *object_name(const Candidate &candidate) const { return object_names_.c_str() + candidate.name_offset; }

  GcItem describe(const Candidate &candidate) const {
    GcItem item;
    item.consumer = consumers_[candidate.consumer];
    const ConsumerLayout layout = cache_.layout(item.consumer);
    if (candidate.is_object) {
      item.kind = "object";
      item.path = (layout.objects() / object_name(candidate)).string();
    } else {
      item.kind = "entry";
      item.content_key = unpack_key(candidate.key);
      item.path = layout.entry(item.content_key).string();
    }
    item.bytes = candidate.bytes;
    item.last_used = candidate.last_used;
    return item;
  }

  std::string evict_entry(const GcItem &item) {
    const ConsumerLayout layout = cache_.layout(item.consumer);
    const fs::path dir(item.path);
    try {
      files::FileLock manifest_lock(layout.manifest_lock());
      // Named meanwhile (a publish or build since the survey)? Then it stays unless asked.
      const auto manifest = cache_.manifest(item.consumer);
      std::string name_now;
      if (manifest) {
        for (const auto &[name, record] : manifest->artifacts) {
          if (record.content_key == item.content_key) name_now = name;
        }
      }
      if (!name_now.empty() && !options_.include_named) return "kept: named";
      auto held = lock_entry_files(dir);
      if (!held) return "kept: in use";
      if (!name_now.empty()) cache_.drop_record_locked(item.consumer, name_now, item.content_key);
      const fs::path aside = layout.entries() / (std::string(kStagingPrefix) + files::unique_suffix() + kEvictedSuffix);
      fs::rename(dir, aside);
      files::fsync_path(layout.entries());
      KILN_FAULT_POINT("gc.after_rename");
      held->clear();
      files::remove_tree(aside);  // a crash before this: the sweep removes it
      boost::system::error_code error;
      fs::remove(use_marker(layout, item.content_key), error);
    } catch (const std::exception &error) {
      if (log_) log_(LogLevel::warning, "kiln gc: cannot evict " + dir.string() + ": " + error.what());
      return std::string("kept: ") + error.what();
    }
    return "evicted";
  }

  // The bykey pointers naming an entry this gc evicted: removed, each only while it still names
  // that entry. One that cannot be removed is rebuilt over (kiln verify lists it).
  void drop_pointers(const std::string &consumer, std::vector<PackedKey> &evicted) {
    if (evicted.empty()) return;
    std::sort(evicted.begin(), evicted.end());
    files::for_each_name(cache_.layout(consumer).bykey_dir(), [&](const std::string &input_key) {
      if (!is_valid_key(input_key)) return;
      const auto key = cache_.pointer(consumer, input_key, LogCallback());
      const auto packed = key ? pack_key(*key) : std::nullopt;
      if (!packed || !std::binary_search(evicted.begin(), evicted.end(), *packed)) return;
      try {
        cache_.drop_pointer(consumer, input_key, *key);
      } catch (const std::exception &) {
      }
    });
  }

  std::string evict_object(const GcItem &item) {
    boost::system::error_code error;
    fs::remove(item.path, error);
    if (error) return "kept: " + error.message();
    fs::remove(item.path + ".digest", error);
    return "evicted";
  }

  const LocalStore &cache_;
  const GcOptions &options_;
  GcReport &report_;
  const LogCallback &log_;
  std::time_t now_;
  std::vector<std::string> consumers_;  // sorted, as files::names_in lists them
  std::vector<std::vector<PackedKey>> evicted_;  // per consumer: the entries evicted (their pointers go)
  std::string object_names_;            // the object files' names, each ended by a NUL
};

}  // namespace

GcReport collect_garbage(const LocalStore &cache, const GcOptions &options, const LogCallback &log) {
  if (!options.max_bytes && !options.older_than) {
    throw UsageError("kiln gc needs a limit: --max-size SIZE (e.g. 2G) and/or --older-than AGE (e.g. 30d)");
  }
  GcReport report;
  report.cache = cache.root().string();
  if (!is_real_directory(cache.root())) return report;  // nothing cached yet
  const auto lock = files::FileLock::try_acquire(cache.root() / "gc.lock");
  if (!lock) throw IoError("another kiln gc is running on " + cache.root().string() + "; wait for it to finish");
  const LocalStore walker(cache.location(), ParsedRecords::forget);
  Collector(walker, options, report, log).run();
  // What a crashed or failed writer of the ABI header copies left (the same rule a build's own
  // sweep applies): removed even when no entry is.
  if (!options.dry_run) sweep_abi_leftovers(cache.root() / "abi");
  return report;
}

}  // namespace kiln::store
