#include "files/files.hpp"
#include "files/unique_fd.hpp"
#include "support/fault_point.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "support/typed_errors.hpp"

namespace kiln::files {

namespace fs = boost::filesystem;

[[noreturn]] void throw_io(const std::string &what, const fs::path &path, int error) {
  throw IoError(what + " " + path.string() + ": " + std::strerror(error) + support::io_fix(error));
}

namespace {

const char *kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void refuse(const fs::path &file, FileOrigin origin, const std::string &why) {
  if (origin == FileOrigin::store) {
    throw IntegrityError("store file " + file.string() + " " + why +
                         ": the store was altered; kiln reads only regular files kiln wrote - move it away, then "
                         "republish or rebuild what it belonged to");
  }
  throw UsageError(file.string() + " " + why + ": kiln reads its inputs only from regular files of sensible size; "
                   "give the path of the real file");
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

std::set<std::string> names_in(const fs::path &dir) {
  std::set<std::string> names;
  for_each_name(dir, [&](const std::string &name) { names.insert(name); });
  return names;
}

void for_each_name(const fs::path &dir, const std::function<void(const std::string &name)> &visit) {
  boost::system::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    visit(it->path().filename().string());
  }
}

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 random(std::random_device{}() ^
                                      static_cast<std::uint64_t>(
                                          std::chrono::steady_clock::now().time_since_epoch().count()));
  return std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(random() % 1000000007);
}

int open_regular(const fs::path &file, FileOrigin origin, std::uint64_t max_bytes, struct stat *opened,
                 int extra_flags) {
  // O_NONBLOCK: opening a FIFO without a writer (or a device) returns at once instead of hanging;
  // it changes nothing for a regular file.
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | extra_flags));
  if (fd.get() < 0) {
    if (errno == ENOENT) throw NotFoundError("no file " + file.string());
    throw_io("cannot open", file, errno);
  }
  struct stat own {};
  struct stat &info = opened != nullptr ? *opened : own;
  if (::fstat(fd.get(), &info) != 0) throw_io("cannot stat", file, errno);
  if (!S_ISREG(info.st_mode)) refuse(file, origin, std::string("is ") + kind_of(info.st_mode) + ", not a regular file");
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes) {
    refuse(file, origin, "is " + std::to_string(info.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                             " such a file may have");
  }
  return fd.release();
}

std::string read_file(const fs::path &file, FileOrigin origin, std::uint64_t max_bytes, struct stat *opened,
                      int extra_flags) {
  UniqueFd fd(open_regular(file, origin, max_bytes, opened, extra_flags));
  std::string content;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot read", file, errno);
    }
    if (got == 0) break;
    if (content.size() + static_cast<std::size_t>(got) > max_bytes) {
      refuse(file, origin, "grew past the " + std::to_string(max_bytes) + " bytes such a file may have while being read");
    }
    content.append(buffer, static_cast<std::size_t>(got));
  }
  return content;
}

void fsync_path(const fs::path &path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw_io("cannot open", path, errno);
  if (::fsync(fd.get()) != 0 && errno != EINVAL) throw_io("cannot fsync", path, errno);
}

void sync_file_system(const fs::path &path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw_io("cannot open", path, errno);
  if (::syncfs(fd.get()) != 0) throw_io("cannot sync the file system of", path, errno);
}

std::string atomic_temp_prefix(const std::string &file_name) { return "." + file_name + ".tmp-"; }

int remove_dead_temps(const fs::path &file, std::chrono::seconds min_age) {
  const std::string prefix = atomic_temp_prefix(file.filename().string());
  const std::time_t now = std::time(nullptr);
  int removed = 0;
  boost::system::error_code error;
  for (fs::directory_iterator it(file.parent_path(), error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().compare(0, prefix.size(), prefix) != 0) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0 || now - info.st_mtime < min_age.count()) continue;
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  return removed;
}

void write_file_atomic(const fs::path &file, std::string_view content, unsigned mode) {
  const fs::path temp = file.parent_path() / (atomic_temp_prefix(file.filename().string()) + unique_suffix());
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

StagingFileWriter::StagingFileWriter(const fs::path &file, unsigned mode)
    : file_(file), fd_(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)) {
  if (fd_ < 0) throw_io("cannot create", file_, errno);
  if (::fchmod(fd_, mode) != 0) {
    const int error = errno;
    ::close(fd_);
    throw_io("cannot chmod", file_, error);
  }
}

StagingFileWriter::~StagingFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void StagingFileWriter::append(const char *data, std::size_t size) {
  write_all(fd_, data, size, file_);
  written_ += size;
}

void StagingFileWriter::close() {
  UniqueFd fd(fd_);
  fd_ = -1;
  close_checked(fd, file_);
}

void copy_file_synced(const fs::path &from, const fs::path &to, unsigned mode) {
  UniqueFd in(open_regular(from, FileOrigin::store));
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (out.get() < 0) throw_io("cannot create", to, errno);
  try {
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
  } catch (...) {
    ::unlink(to.c_str());  // a full disk leaves no partial copy (callers copy into temps of shared directories)
    throw;
  }
  KILN_FAULT_POINT("file.after_copy_fsync");
}

void create_directories(const fs::path &dir) {
  if (dir.empty()) return;
  struct stat info {};
  if (::stat(dir.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) throw IoError(dir.string() + " exists and is not a directory: move it away");
    return;
  }
  kiln::files::create_directories(dir.parent_path());
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (errno == EEXIST) return;  // another process made it first
    throw_io("cannot create directory", dir, errno);
  }
  if (::chmod(dir.c_str(), 0755) != 0) throw_io("cannot chmod", dir, errno);  // undo a lax umask
}

}  // namespace kiln::files
