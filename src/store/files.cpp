#include "store/files.hpp"
#include "store/unique_fd.hpp"
#include "support/fault_point.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

namespace kiln::store {
namespace {

[[noreturn]] void throw_io(const std::string &what, const fs::path &path, int error) {
  std::string fix;
  if (error == ENOSPC) fix = " (the disk is full: free space and retry; nothing was changed)";
  if (error == EROFS) fix = " (read-only file system: point KILN_CACHE_DIR at a writable directory)";
  if (error == EACCES || error == EPERM) fix = " (check the directory's owner and permissions)";
  throw IoError(what + " " + path.string() + ": " + std::strerror(error) + fix);
}

void write_all(int fd, const char *data, std::size_t size, const fs::path &path) {
  while (size > 0) {
    const ssize_t put = ::write(fd, data, size);
    if (put < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot write", path, errno);
    }
    data += put;
    size -= static_cast<std::size_t>(put);
  }
}

void close_checked(UniqueFd &fd, const fs::path &path) {
  // close can report a deferred write error (NFS, quota): it must not be ignored.
  if (::close(fd.release()) != 0) throw_io("cannot close", path, errno);
}

}  // namespace

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 random(std::random_device{}() ^
                                      static_cast<std::uint64_t>(
                                          std::chrono::steady_clock::now().time_since_epoch().count()));
  return std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(random() % 1000000007);
}

std::string read_file(const fs::path &file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) throw NotFoundError("no file " + file.string());
    throw_io("cannot open", file, errno);
  }
  std::string content;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot read", file, errno);
    }
    if (got == 0) break;
    content.append(buffer, static_cast<std::size_t>(got));
  }
  return content;
}

void fsync_path(const fs::path &path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw_io("cannot open", path, errno);
  if (::fsync(fd.get()) != 0 && errno != EINVAL) throw_io("cannot fsync", path, errno);
}

void write_file_atomic(const fs::path &file, std::string_view content, unsigned mode) {
  const fs::path temp = file.parent_path() / ("." + file.filename().string() + ".tmp-" + unique_suffix());
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (fd.get() < 0) throw_io("cannot create", temp, errno);
  try {
    write_all(fd.get(), content.data(), content.size(), temp);
    KILN_FAULT_POINT("file.after_temp_write");
    if (::fchmod(fd.get(), mode) != 0) throw_io("cannot chmod", temp, errno);
    if (::fsync(fd.get()) != 0) throw_io("cannot fsync", temp, errno);
    close_checked(fd, temp);
    KILN_FAULT_POINT("file.after_temp_fsync");
    if (::rename(temp.c_str(), file.c_str()) != 0) throw_io("cannot rename into", file, errno);
    KILN_FAULT_POINT("file.after_rename");
  } catch (...) {
    ::unlink(temp.c_str());  // never leave a partial temp behind
    throw;
  }
  fsync_path(file.parent_path());
  KILN_FAULT_POINT("file.after_dir_fsync");
}

void write_staging_file(const fs::path &file, std::string_view content, unsigned mode) {
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (fd.get() < 0) throw_io("cannot create", file, errno);
  write_all(fd.get(), content.data(), content.size(), file);
  if (::fchmod(fd.get(), mode) != 0) throw_io("cannot chmod", file, errno);
  close_checked(fd, file);
}

void copy_file_synced(const fs::path &from, const fs::path &to, unsigned mode) {
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) {
    if (errno == ENOENT) throw NotFoundError("no file " + from.string());
    throw_io("cannot open", from, errno);
  }
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (out.get() < 0) throw_io("cannot create", to, errno);
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t got = ::read(in.get(), buffer.data(), buffer.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot read", from, errno);
    }
    if (got == 0) break;
    write_all(out.get(), buffer.data(), static_cast<std::size_t>(got), to);
  }
  if (::fchmod(out.get(), mode) != 0) throw_io("cannot chmod", to, errno);
  if (::fsync(out.get()) != 0) throw_io("cannot fsync", to, errno);
  close_checked(out, to);
  KILN_FAULT_POINT("file.after_copy_fsync");
}

void create_directories(const fs::path &dir) {
  if (dir.empty()) return;
  struct stat info {};
  if (::stat(dir.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) throw IoError(dir.string() + " exists and is not a directory: move it away");
    return;
  }
  kiln::store::create_directories(dir.parent_path());
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (errno == EEXIST) return;  // another process made it first
    throw_io("cannot create directory", dir, errno);
  }
  if (::chmod(dir.c_str(), 0755) != 0) throw_io("cannot chmod", dir, errno);  // undo a lax umask
}

}  // namespace kiln::store
