// Opening the generation table's file: <writable cache>/swap/generations, fixed-size, mapped
// MAP_SHARED.
//
// Why a file in the cache and not /dev/shm (or a Boost.Interprocess shared_memory_object, which
// lives there): containers that share a store volume share its files, not /dev/shm, so a
// `kiln publish` in a build container reaches the controller in another. Plain mmap rather than
// Boost.Interprocess' file_mapping: the file is opened O_NOFOLLOW | O_NONBLOCK and checked
// (fstat) before anything maps it, which file_mapping's open does not allow.
//
// Only the owner of the file may have written it (same uid, not writable by group or others);
// the same uid could also truncate it under a mapping (SIGBUS), but that user can ptrace the
// controller anyway, and kiln itself never truncates: it replaces by rename.
#include "swap/generations_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <kiln/errors.hpp>

#include "store/files.hpp"
#include "store/unique_fd.hpp"

namespace kiln::swap {

namespace {

constexpr std::uint64_t kMagic = 0x314e45476e6c696bull;  // "kilnGEN1" little-endian

constexpr auto acquire = std::memory_order_acquire;
constexpr auto relaxed = std::memory_order_relaxed;

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
  if (header.magic.load(acquire) != kMagic) return "no kiln generation table (bad magic)";
  if (header.layout.load(relaxed) != shape.layout_version || header.slots.load(relaxed) != shape.slots ||
      header.records.load(relaxed) != shape.records || header.size.load(relaxed) != shape.bytes) {
    return "another layout of the table";
  }
  return "";
}

// A fresh table in a temp file next to `file`, then linked (when absent) or renamed over it
// (replacing `damaged`, when it is still the file there).
void write_fresh(const std::string &dir, const std::string &file, const GenerationsShape &shape,
                 const struct stat *damaged) {
  const std::string temp = dir + "/" + store::atomic_temp_prefix("generations") + store::unique_suffix();
  {
    store::UniqueFd fd(::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw IoError("cannot create " + temp + ": " + error_text(errno) + "; make " + dir + " writable");
    GenerationsHeader header{};
    header.magic.store(kMagic, relaxed);
    header.layout.store(shape.layout_version, relaxed);
    header.slots.store(shape.slots, relaxed);
    header.records.store(shape.records, relaxed);
    header.size.store(shape.bytes, relaxed);
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

GenerationsFile::~GenerationsFile() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

bool GenerationsFile::current() const noexcept {
  struct stat info {};
  return ::lstat(path_.c_str(), &info) == 0 && info.st_dev == device_ && info.st_ino == inode_;
}

std::unique_ptr<GenerationsFile> GenerationsFile::open(const std::string &cache_dir, const GenerationsShape &shape,
                                                       const LogCallback &log) {
  const std::string dir = cache_dir + "/swap";
  const std::string file = dir + "/generations";
  try {
    store::create_directories(dir);
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
    store::UniqueFd fd(::open(file.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
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
      std::unique_ptr<GenerationsFile> mapped(new GenerationsFile());
      mapped->path_ = file;
      mapped->device_ = info.st_dev;
      mapped->inode_ = info.st_ino;
      void *base = ::mmap(nullptr, shape.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
      if (base == MAP_FAILED) {
        throw IoError("no cross-process swap trigger: cannot map " + file + ": " + error_text(errno));
      }
      mapped->base_ = base;
      mapped->bytes_ = shape.bytes;
      why = distrust(*static_cast<const GenerationsHeader *>(base), shape);
      if (why.empty()) return mapped;
    }
    safe_log(log, LogLevel::warning, "swap trigger table " + file + " is not trusted (" + why + "): replaced by a new one");
    write_fresh(dir, file, shape, &info);
  }
  throw IoError("no cross-process swap trigger: " + file + " kept changing while it was opened (4 attempts); retry");
}

}  // namespace kiln::swap
