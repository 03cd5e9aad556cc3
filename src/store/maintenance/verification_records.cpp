#include "store/maintenance/verification_records.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>

#include "files/files.hpp"
#include "store/names.hpp"
#include "files/unique_fd.hpp"
#include "support/failure_point.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

// One line: what, its format version, then the fields. Far below kMaxRecordBytes.
constexpr const char *kFormat = "kiln-verified 1 %32s %32s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNd64;
constexpr std::size_t kMaxRecordBytes = 256;

std::string record_text(const std::string &content_key, const files::FileIdentity &id, const std::string &digest) {
  char line[kMaxRecordBytes];
  std::snprintf(line, sizeof line,
                "kiln-verified 1 %s %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 "\n",
                content_key.c_str(), digest.c_str(), id.device, id.inode, id.size, id.mtime_ns, id.ctime_ns);
  return line;
}

std::int64_t now_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

}  // namespace

bool VerificationRecords::vouches(const std::string &content_key, const files::FileIdentity &id,
                                  const std::string &digest) const noexcept try {
  if (dir_.empty() || !is_valid_key(content_key)) return false;
  KILN_FAILURE_POINT("store.vouches");
  const std::string file = (dir_ / content_key).string();
  // Never blocks (a FIFO planted here is not read), never follows a link.
  files::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) return false;
  struct stat info {};
  // Only a record of ours (or root's) that nobody else could have written counts.
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_size <= 0 ||
      static_cast<std::size_t>(info.st_size) >= kMaxRecordBytes || (info.st_uid != ::geteuid() && info.st_uid != 0) ||
      (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return false;
  }
  char text[kMaxRecordBytes] = {};
  const ssize_t got = ::read(fd.get(), text, sizeof text - 1);
  if (got != info.st_size) return false;
  char key[33] = {}, recorded_digest[33] = {};
  files::FileIdentity recorded;
  if (std::sscanf(text, kFormat, key, recorded_digest, &recorded.device, &recorded.inode, &recorded.size,
                  &recorded.mtime_ns, &recorded.ctime_ns) != 7) {
    return false;
  }
  return content_key == key && digest == recorded_digest && recorded == id;
} catch (...) {
  return false;  // out of memory for the record's path: not vouched, so the file is hashed instead
}

void VerificationRecords::remember(const std::string &content_key, const files::FileIdentity &id, const std::string &digest,
                                   const LogCallback &log) const noexcept {
  if (dir_.empty() || !is_valid_key(content_key) || !is_valid_key(digest)) return;
  if (id.ctime_ns > now_ns() - std::chrono::nanoseconds(kSettled).count()) return;  // racy: see the header
  try {
    if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) return;  // no writable cache: no records
    const fs::path file = dir_ / content_key;
    // A writer killed between its temp and the rename leaves a temp; a record is written in
    // microseconds, so one a minute old is nobody's.
    files::remove_dead_temps(file);
    std::random_device random;
    const fs::path temp = dir_ / (files::atomic_temp_prefix(content_key) + std::to_string(random()));
    const std::string text = record_text(content_key, id, digest);
    {
      files::UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
      if (fd.get() < 0) return;
      if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
        ::unlink(temp.c_str());
        return;
      }
    }
    if (::rename(temp.c_str(), file.c_str()) != 0) ::unlink(temp.c_str());
  } catch (const std::exception &error) {
    if (log) {
      try {
        log(LogLevel::debug, std::string("verification record for ") + content_key + " not written: " + error.what());
      } catch (...) {
      }
    }
  }
}

}  // namespace kiln::store
