#include "store/staging.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "files/files.hpp"
#include "files/remove_tree.hpp"
#include "store/layout.hpp"

namespace kiln::store {
namespace {

namespace fs = boost::filesystem;

// 64 bits from the OS's entropy as 16 hex digits: a fresh name per directory.
std::string random_hex() {
  std::random_device random;
  const std::uint64_t value = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

fs::path make_exclusive_dir(const fs::path &entries) {
  for (int attempt = 0;; ++attempt) {
    const fs::path dir = entries / (std::string(kStagingPrefix) + kStagingVersionTag + random_hex());
    if (::mkdir(dir.c_str(), 0755) == 0) {
      if (::chmod(dir.c_str(), 0755) != 0) {  // undo a lax umask: entries must not be writable by others
        const int error = errno;
        ::rmdir(dir.c_str());
        throw IoError("cannot chmod " + dir.string() + ": " + std::strerror(error));
      }
      return dir;
    }
    if (errno != EEXIST || attempt >= 100) {
      const int error = errno;
      throw IoError("cannot create a staging directory in " + entries.string() + ": " + std::strerror(error) +
                    (error == ENOSPC ? " (the disk is full: free space and retry; nothing was changed)"
                                     : " (check that the store directory exists and is writable by you)"));
    }
  }
}

files::FileLock lock_inside(const fs::path &dir) {
  try {
    return files::FileLock::create_held(dir / kStagingLockFile);
  } catch (...) {
    files::remove_tree(dir);
    throw;
  }
}

}  // namespace

Staging::Staging(std::string consumer, const fs::path &entries)
    : consumer_(std::move(consumer)), dir_(make_exclusive_dir(entries)), lock_(lock_inside(dir_)) {}

Staging::Staging(Staging &&other) noexcept
    : consumer_(std::move(other.consumer_)),
      dir_(std::move(other.dir_)),
      lock_(std::move(other.lock_)),
      meta_(std::move(other.meta_)) {
  other.dir_.clear();
}

Staging &Staging::operator=(Staging &&other) noexcept {
  if (this != &other) {
    Staging discarded(std::move(*this));
    consumer_ = std::move(other.consumer_);
    dir_ = std::move(other.dir_);
    lock_ = std::move(other.lock_);
    meta_ = std::move(other.meta_);
    other.dir_.clear();
  }
  return *this;
}

Staging::~Staging() {
  if (dir_.empty()) return;
  files::remove_tree(dir_);  // lock_ is released after this body: no sweeper judges it meanwhile
}

void Staging::write(const std::string &name, std::string_view bytes, unsigned mode) const {
  files::write_staging_file(dir_ / name, bytes, mode);
}

void Staging::write_records(const EntryMeta &meta, const std::string &identity_json) {
  files::write_staging_file(dir_ / kMetaFile, serialize_entry_meta(meta));
  files::write_staging_file(dir_ / kIdentityFile, identity_json);
  meta_ = meta;
}

void Staging::release() {
  dir_.clear();
  const files::FileLock dropped(std::move(lock_));
}

}  // namespace kiln::store
