// Opening, checking, locking and reading the generation table's file: <writable
// cache>/swap/generations, fixed-size.
//
// Why a file in the cache and not /dev/shm (or a Boost.Interprocess shared_memory_object, which
// lives there): containers that share a store volume share its files, not /dev/shm, so a
// `kiln publish` in a build container reaches the controller in another. The file is opened
// O_NOFOLLOW | O_NONBLOCK and checked (fstat, then its header) before it is used. Only the owner
// of the file may have written it (same uid, not writable by group or others); kiln itself
// never truncates or rewrites it whole: it replaces it by rename.
#include "swap/generations_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <kiln/errors.hpp>

#include "files/files.hpp"

namespace kiln::swap {

namespace {

constexpr std::uint64_t kMagic = 0x314e45476e6c696bull;  // "kilnGEN1" little-endian

std::string error_text(int error) { return std::strerror(error); }

// Why the opened file cannot be trusted, or "" when it can.
std::string distrust(const struct stat &info, const GenerationsShape &shape) {
  if (!S_ISREG(info.st_mode)) return "not a regular file";
  if (info.st_uid != ::geteuid()) return "owned by uid " + std::to_string(info.st_uid) + ", not this user";
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) return "writable by group or others";
  if (static_cast<std::uint64_t>(info.st_size) != shape.bytes) {
    return std::to_string(info.st_size) + " bytes instead of " + std::to_string(shape.bytes);
  }
  return "";
}

std::string distrust(const GenerationsHeader &header, const GenerationsShape &shape) {
  if (header.magic != kMagic) return "no kiln generation table (bad magic)";
  if (header.layout != shape.layout_version || header.slots != shape.slots || header.records != shape.records ||
      header.size != shape.bytes) {
    return "another layout of the table";
  }
  return "";
}

// A fresh table in a temp file next to `file`, then linked (when absent) or renamed over it
// (replacing `damaged`, when it is still the file there).
void write_fresh(const std::string &dir, const std::string &file, const GenerationsShape &shape,
                 const struct stat *damaged) {
  const std::string temp = dir + "/" + files::atomic_temp_prefix("generations") + files::unique_suffix();
  {
    files::UniqueFd fd(::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw IoError("cannot create " + temp + ": " + error_text(errno) + "; make " + dir + " writable");
    GenerationsHeader header{};
    header.magic = kMagic;
    header.layout = shape.layout_version;
    header.slots = shape.slots;
    header.records = shape.records;
    header.size = shape.bytes;
    if (::fchmod(fd.get(), 0644) != 0 || ::ftruncate(fd.get(), static_cast<off_t>(shape.bytes)) != 0 ||
        ::pwrite(fd.get(), &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header)) {
      const int error = errno;
      ::unlink(temp.c_str());
      throw IoError("cannot write " + temp + ": " + error_text(error));
    }
  }
  if (damaged == nullptr) {
    // link, not rename: two processes creating it at once both end up mapping the first one.
    const int linked = ::link(temp.c_str(), file.c_str());
    const int error = errno;
    ::unlink(temp.c_str());
    if (linked != 0 && error != EEXIST) throw IoError("cannot create " + file + ": " + error_text(error));
    return;
  }
  struct stat now {};
  if (::lstat(file.c_str(), &now) == 0 && (now.st_dev != damaged->st_dev || now.st_ino != damaged->st_ino)) {
    ::unlink(temp.c_str());  // another process replaced it meanwhile: use theirs
    return;
  }
  if (::rename(temp.c_str(), file.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    throw IoError("cannot replace the damaged " + file + ": " + error_text(error) + "; remove it");
  }
}

}  // namespace

void safe_log(const LogCallback &log, LogLevel level, const std::string &line) noexcept {
  if (!log) return;
  try {
    log(level, line);
  } catch (...) {
  }
}

bool GenerationsFile::current() const noexcept {
  if (short_io_.load(std::memory_order_relaxed)) return false;
  struct stat info {};
  return ::lstat(path_.c_str(), &info) == 0 && info.st_dev == device_ && info.st_ino == inode_;
}

GenerationsFile::Hold::Hold(const GenerationsFile *file, std::unique_lock<std::mutex> lock) noexcept
    : file_(file), lock_(std::move(lock)), held_(true) {}

GenerationsFile::Hold::Hold(Hold &&other) noexcept
    : file_(other.file_), lock_(std::move(other.lock_)), held_(other.held_) {
  other.held_ = false;
}

GenerationsFile::Hold::~Hold() {
  if (held_) file_->unlock();
}

bool GenerationsFile::reopen_after_fork() const noexcept {
  // A forked child shares the parent's open file description, and with it the OFD lock: both
  // would hold it at once and lose each other's bumps. The child opens the file anew.
  files::UniqueFd fd(::open(path_.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat info {};
  if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0 || info.st_dev != device_ || info.st_ino != inode_) {
    short_io_.store(true, std::memory_order_relaxed);  // replaced meanwhile: the caller reopens
    return false;
  }
  fd_.reset(fd.release());
  opened_by_ = ::getpid();
  return true;
}

GenerationsFile::Hold GenerationsFile::hold(bool exclusive) const noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  if (::getpid() != opened_by_ && !reopen_after_fork()) {
    Hold none(this, std::unique_lock<std::mutex>());
    none.held_ = false;
    return none;
  }
  struct flock range {};
  range.l_type = exclusive ? F_WRLCK : F_RDLCK;
  range.l_whence = SEEK_SET;  // start 0, length 0: the whole file
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    if (::fcntl(fd_.get(), F_OFD_SETLK, &range) == 0) return Hold(this, std::move(lock));
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EACCES) || std::chrono::steady_clock::now() >= deadline) {
      Hold none(this, std::unique_lock<std::mutex>());
      none.held_ = false;
      return none;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

void GenerationsFile::unlock() const noexcept {
  struct flock range {};
  range.l_type = F_UNLCK;
  range.l_whence = SEEK_SET;
  ::fcntl(fd_.get(), F_OFD_SETLK, &range);
}

bool GenerationsFile::read(std::size_t offset, void *out, std::size_t bytes) const noexcept {
  ssize_t got = 0;
  do {
    got = ::pread(fd_.get(), out, bytes, static_cast<off_t>(offset));
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(bytes)) return true;
  short_io_.store(true, std::memory_order_relaxed);
  return false;
}

bool GenerationsFile::write(std::size_t offset, const void *in, std::size_t bytes) const noexcept {
  // Never past the end: a file truncated in place must not be extended with holes and trusted.
  struct stat info {};
  if (::fstat(fd_.get(), &info) != 0 || static_cast<std::uint64_t>(info.st_size) < offset + bytes) {
    short_io_.store(true, std::memory_order_relaxed);
    return false;
  }
  ssize_t put = 0;
  do {
    put = ::pwrite(fd_.get(), in, bytes, static_cast<off_t>(offset));
  } while (put < 0 && errno == EINTR);
  if (put == static_cast<ssize_t>(bytes)) return true;
  short_io_.store(true, std::memory_order_relaxed);
  return false;
}

std::unique_ptr<GenerationsFile> GenerationsFile::open(const std::string &cache_dir, const GenerationsShape &shape,
                                                       const LogCallback &log) {
  const std::string dir = cache_dir + "/swap";
  const std::string file = dir + "/generations";
  try {
    files::create_directories(dir);
  } catch (const Error &error) {
    throw IoError(std::string("no cross-process swap trigger: ") + error.what());
  }
  struct stat dir_info {};
  if (::lstat(dir.c_str(), &dir_info) != 0 || !S_ISDIR(dir_info.st_mode) || dir_info.st_uid != ::geteuid() ||
      (dir_info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw IoError("no cross-process swap trigger: " + dir + " is not a directory of this user that only it can write "
                  "(a symlink, or writable by others); remove it and kiln makes a new one");
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    files::UniqueFd fd(::open(file.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat info {};
    std::string why;
    if (fd.get() < 0) {
      const int error = errno;
      if (error == ENOENT) {
        write_fresh(dir, file, shape, nullptr);
        continue;
      }
      if (error != ELOOP && error != EISDIR && error != ENXIO && error != EACCES) {
        throw IoError("no cross-process swap trigger: cannot open " + file + ": " + error_text(error));
      }
      if (::lstat(file.c_str(), &info) != 0) continue;
      if (error == EACCES && info.st_uid != ::geteuid()) {
        throw IoError("no cross-process swap trigger: " + file + " belongs to uid " + std::to_string(info.st_uid) +
                      " and this user cannot write it; run as that user or remove it");
      }
      why = S_ISLNK(info.st_mode) ? "a symbolic link" : "not a file this process can open (" + error_text(error) + ")";
    } else if (::fstat(fd.get(), &info) != 0) {
      throw IoError("no cross-process swap trigger: cannot stat " + file + ": " + error_text(errno));
    } else {
      why = distrust(info, shape);
    }
    if (why.empty()) {
      std::unique_ptr<GenerationsFile> opened(new GenerationsFile());
      opened->path_ = file;
      opened->device_ = info.st_dev;
      opened->inode_ = info.st_ino;
      opened->fd_.reset(fd.release());
      opened->opened_by_ = ::getpid();
      GenerationsHeader header{};
      const Hold held = opened->hold(false);
      if (!held) {
        throw IoError("no cross-process swap trigger: " + file + " stayed locked by another process for 2 s; retry");
      }
      why = opened->read(0, &header, sizeof header) ? distrust(header, shape) : "shorter than its header";
      if (why.empty()) return opened;
    }
    safe_log(log, LogLevel::warning, "swap trigger table " + file + " is not trusted (" + why + "): replaced by a new one");
    write_fresh(dir, file, shape, &info);
  }
  throw IoError("no cross-process swap trigger: " + file + " kept changing while it was opened (4 attempts); retry");
}

}  // namespace kiln::swap
