#include "files/locks.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include <kiln/errors.hpp>

#include "files/files.hpp"
#include "files/unique_fd.hpp"

namespace kiln::files {
namespace {

namespace fs = boost::filesystem;

[[noreturn]] void fail(const std::string &what, const fs::path &path, int error) {
  std::string fix = " (check that the store directory is writable by you)";
  if (error == ELOOP) fix = " (it is a symbolic link: kiln never follows links for lock files; remove it)";
  if (error == EINVAL) fix = " (this kernel lacks open file description locks, Linux 3.15+; or the file system does not lock)";
  if (error == ENOLCK) fix = " (the system's lock table is full, or this file system does not support locks)";
  throw IoError(what + " " + path.string() + ": " + std::strerror(error) + fix);
}

// O_NONBLOCK only so that a FIFO planted under the name cannot hang the open; it has no effect
// on lock waits. O_NOFOLLOW: a link in a store is never followed to create or lock a file elsewhere.
int open_lock_file(const fs::path &path, int extra_flags) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | extra_flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw IoError("lock file " + path.string() + " is not a regular file: move it away (kiln recreates it)");
  }
  return fd;
}

// 0 when set, else the errno (EAGAIN when `wait` is false and another description holds it).
int set_lock(int fd, short type, bool wait) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 0;  // the whole file, as Boost.Interprocess locks it: old kilns conflict with us
  lock.l_pid = 0;  // required by F_OFD_*
  for (;;) {
    if (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock) == 0) return 0;
    if (errno != EINTR) return errno == EACCES ? EAGAIN : errno;
  }
}

}  // namespace

FileLock::FileLock(const fs::path &lock_file) {
  UniqueFd fd(open_lock_file(lock_file, O_CREAT));
  if (fd.get() < 0) fail("cannot open lock file", lock_file, errno);
  if (const int error = set_lock(fd.get(), F_WRLCK, true)) fail("cannot lock", lock_file, error);
  fd_ = fd.release();
}

std::unique_ptr<FileLock> FileLock::try_acquire(const fs::path &lock_file) {
  return try_acquire_for(lock_file, std::chrono::milliseconds(0));
}

std::unique_ptr<FileLock> FileLock::try_acquire_for(const fs::path &lock_file, std::chrono::milliseconds timeout) {
  UniqueFd fd(open_lock_file(lock_file, O_CREAT));
  if (fd.get() < 0) fail("cannot open lock file", lock_file, errno);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    const int error = set_lock(fd.get(), F_WRLCK, false);
    if (error == 0) return std::unique_ptr<FileLock>(new FileLock(fd.release()));
    if (error != EAGAIN) fail("cannot lock", lock_file, error);
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return nullptr;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(25));
  }
}

std::unique_ptr<FileLock> FileLock::try_acquire_existing(const fs::path &lock_file, bool *missing) {
  *missing = false;
  UniqueFd fd(open_lock_file(lock_file, 0));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      *missing = true;
      return nullptr;
    }
    fail("cannot open lock file", lock_file, errno);
  }
  const int error = set_lock(fd.get(), F_WRLCK, false);
  if (error == EAGAIN) return nullptr;
  if (error != 0) fail("cannot lock", lock_file, error);
  return std::unique_ptr<FileLock>(new FileLock(fd.release()));
}

FileLock FileLock::create_held(const fs::path &lock_file) {
  const fs::path temp = lock_file.parent_path() / ("." + lock_file.filename().string() + ".new-" + unique_suffix());
  UniqueFd fd(open_lock_file(temp, O_CREAT | O_EXCL));
  if (fd.get() < 0) fail("cannot create lock file", temp, errno);
  if (const int error = set_lock(fd.get(), F_WRLCK, false)) {
    ::unlink(temp.c_str());
    fail("cannot lock", temp, error);
  }
  if (::rename(temp.c_str(), lock_file.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail("cannot rename lock file into place as", lock_file, error);
  }
  return FileLock(fd.release());
}

void FileLock::release() noexcept {
  if (fd_ < 0) return;
  // Explicitly, not only by close: a child forked without exec may share this description.
  set_lock(fd_, F_UNLCK, false);
  ::close(fd_);
  fd_ = -1;
}

FileLock::~FileLock() { release(); }

FileLock::FileLock(FileLock &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FileLock &FileLock::operator=(FileLock &&other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

}  // namespace kiln::files
