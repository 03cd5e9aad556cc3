#include "store/sweep.hpp"
#include "support/fault_point.hpp"

#include <sys/stat.h>

#include <ctime>
#include <set>
#include <string>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "files/files.hpp"
#include "files/remove_tree.hpp"
#include "files/locks.hpp"
#include "store/names.hpp"
#include "support/text.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

using support::starts_with;

// Neither its entries (mtime) nor its own inode (ctime: a rename, a chmod) changed for `grace`.
bool unchanged_for(const fs::path &dir, std::chrono::seconds grace) {
  struct stat info {};
  if (::lstat(dir.c_str(), &info) != 0) return false;
  const std::time_t newest = std::max(info.st_mtim.tv_sec, info.st_ctim.tv_sec);
  return std::time(nullptr) - newest >= grace.count();
}

bool is_v2_staging(const std::string &name) {
  const std::string v2 = std::string(kStagingPrefix) + kStagingVersionTag;
  return starts_with(name, v2) && name.find('-', v2.size()) == std::string::npos;  // not "-damaged" or "-replaced"
}

int sweep_staging(const ConsumerLayout &layout, std::chrono::seconds lockless_grace, std::chrono::seconds v2_grace) {
  int removed = 0;
  boost::system::error_code error;
  for (fs::directory_iterator it(layout.entries(), error), end; !error && it != end; it.increment(error)) {
    const fs::path dir = it->path();
    boost::system::error_code status_error;
    if (!starts_with(dir.filename().string(), kStagingPrefix) || !fs::is_directory(fs::symlink_status(dir, status_error))) {
      continue;
    }
    try {
      bool missing = false;
      // Held while removing, so that no other sweeper judges it meanwhile.
      const auto lock = files::FileLock::try_acquire_existing(dir / kStagingLockFile, &missing);
      const auto grace = is_v2_staging(dir.filename().string()) ? std::min(v2_grace, lockless_grace) : lockless_grace;
      if (!lock && !(missing && unchanged_for(dir, grace))) continue;  // live
      KILN_FAULT_POINT("sweep.before_remove");
      if (files::remove_tree(dir)) ++removed;
      KILN_FAULT_POINT("sweep.after_remove");
    } catch (const Error &) {
      // A lock file that is not a regular file, a directory we may not read: not ours to judge.
    }
  }
  return removed;
}

// The temps of a file of the consumer's directory written under `lock` (manifest.json under
// manifest.lock, versions.json under versions.lock).
int sweep_temps_of(const ConsumerLayout &layout, const fs::path &file, const fs::path &lock_file) {
  const std::string prefix = files::atomic_temp_prefix(file.filename().string());
  bool any = false;
  for (const auto &name : files::names_in(layout.dir())) any = any || starts_with(name, prefix);
  if (!any) return 0;
  const auto lock = files::FileLock::try_acquire(lock_file);
  return lock ? files::remove_dead_temps(file) : 0;
}

int sweep_bykey_temps(const ConsumerLayout &layout) {
  std::set<std::string> keys;
  for (const auto &name : files::names_in(layout.bykey_dir())) {
    const std::size_t tmp = name.find(".tmp-");
    if (name.empty() || name[0] != '.' || tmp == std::string::npos) continue;
    const std::string key = name.substr(1, tmp - 1);
    if (is_valid_key(key)) keys.insert(key);
  }
  int removed = 0;
  for (const auto &key : keys) {
    files::create_directories(layout.locks());
    const auto lock = files::FileLock::try_acquire(layout.build_lock(key));
    if (lock) removed += files::remove_dead_temps(layout.bykey(key));
  }
  return removed;
}

// objects/: a unit's object and its digest are written through temps (".<stem>.tmp-*",
// ".<object>.digest.tmp-*") by builds of any input key, so no one lock covers them; a temp
// untouched for files::kTempWriteBound is no writer's (each is renamed as soon as it is written).
int sweep_object_temps(const ConsumerLayout &layout) {
  const std::time_t now = std::time(nullptr);
  int removed = 0;
  for (const auto &name : files::names_in(layout.objects())) {
    if (name.empty() || name[0] != '.' || name.find(".tmp-") == std::string::npos) continue;
    const fs::path temp = layout.objects() / name;
    struct stat info {};
    if (::lstat(temp.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || now - info.st_mtime < files::kTempWriteBound.count()) {
      continue;
    }
    if (::unlink(temp.c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace

std::vector<AbiLeftover> abi_leftovers(const fs::path &abi_root) {
  std::vector<AbiLeftover> found;
  for (const auto &name : files::names_in(abi_root)) {
    const bool staging = starts_with(name, ".staging-"), damaged = starts_with(name, ".damaged-");
    if (!staging && !damaged) continue;
    const fs::path path = abi_root / name;
    // By its own mtime (set when its last file was created), as it always was for these copies.
    struct stat info {};
    const auto grace = damaged ? kLocklessStagingGrace : files::kTempWriteBound;
    const bool due = ::lstat(path.c_str(), &info) == 0 && std::time(nullptr) - info.st_mtime >= grace.count();
    found.push_back({path, damaged, due});
  }
  return found;
}

int sweep_abi_leftovers(const fs::path &abi_root) {
  int removed = 0;
  try {
    for (const auto &leftover : abi_leftovers(abi_root)) {
      if (leftover.due && files::remove_tree(leftover.path)) ++removed;
    }
  } catch (const std::exception &) {  // a directory we may not list: not ours to judge
  }
  return removed;
}

SweepCounts sweep_leftovers(const ConsumerLayout &layout, std::chrono::seconds lockless_grace,
                            std::chrono::seconds v2_grace) {
  SweepCounts counts;
  counts.staging_dirs = sweep_staging(layout, lockless_grace, v2_grace);
  // A lock we cannot open (permissions, a non-file under its name): leave those temps.
  try {
    counts.temps += sweep_temps_of(layout, layout.manifest(), layout.manifest_lock());
    counts.temps += sweep_temps_of(layout, layout.versions(), layout.versions_lock());
  } catch (const Error &) {
  }
  try {
    counts.temps += sweep_bykey_temps(layout);
  } catch (const Error &) {
  }
  counts.temps += sweep_object_temps(layout);
  return counts;
}

}  // namespace kiln::store
