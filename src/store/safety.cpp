#include "store/safety.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <kiln/errors.hpp>

namespace kiln::store {
namespace {

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

void check_stat(const std::string &path, const struct stat &info, bool must_be_file) {
  if (must_be_file && !S_ISREG(info.st_mode)) {
    throw IntegrityError("refusing to load " + path +
                         ": it is not a regular file (a symlink or device in a store entry means the entry was "
                         "altered); republish the artifact");
  }
  const uid_t me = ::geteuid();
  if (info.st_uid != me && info.st_uid != 0) {
    throw IntegrityError("refusing to run code from " + path + ": owned by uid " +
                         std::to_string(info.st_uid) + ", not by you (uid " + std::to_string(me) +
                         ") or root; use a store you own (KILN_CACHE_DIR) or chown it");
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw IntegrityError("refusing to run code from " + path + ": mode " + octal(info.st_mode) +
                         " lets others write it, so anyone could replace the code; fix with: chmod go-w " +
                         path);
  }
}

void check_one(const std::string &path, bool must_be_file, FileIdentity *identity = nullptr) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) throw NotFoundError("no file " + path);
    throw IoError("cannot stat " + path + ": " + std::strerror(errno));
  }
  check_stat(path, info, must_be_file);
  if (identity != nullptr) *identity = identity_of(info);
}

void check_directories(const boost::filesystem::path &file, const boost::filesystem::path &store_root) {
  // Plain string walking: this runs on every load, and path objects cost more than the lstat calls.
  const std::string root = store_root.lexically_normal().string();
  std::string dir = file.string();
  for (std::size_t slash = dir.rfind('/'); slash != std::string::npos && slash > 0; slash = dir.rfind('/')) {
    dir.resize(slash);
    check_one(dir, false);
    if (dir == root) break;
  }
}

}  // namespace

void check_safe_to_execute(const boost::filesystem::path &file, const boost::filesystem::path &store_root) {
  check_one(file.string(), true);
  check_directories(file, store_root);
}

void check_safe_to_execute(const boost::filesystem::path &file, const boost::filesystem::path &store_root,
                           FileIdentity *identity) {
  check_one(file.string(), true, identity);
  check_directories(file, store_root);
}

void check_file_safe(const std::string &file, FileIdentity *identity) { check_one(file, true, identity); }

void check_safe_to_execute(int fd, const boost::filesystem::path &file, const boost::filesystem::path &store_root) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw IoError("cannot stat " + file.string() + ": " + std::strerror(errno));
  check_stat(file.string(), info, true);
  check_directories(file, store_root);
}

}  // namespace kiln::store
