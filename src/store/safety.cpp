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

void check_one(const boost::filesystem::path &path, bool must_be_file) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) throw NotFoundError("no file " + path.string());
    throw IoError("cannot stat " + path.string() + ": " + std::strerror(errno));
  }
  if (must_be_file && !S_ISREG(info.st_mode)) {
    throw IntegrityError("refusing to load " + path.string() +
                         ": it is not a regular file (a symlink or device in a store entry means the entry was "
                         "altered); republish the artifact");
  }
  const uid_t me = ::geteuid();
  if (info.st_uid != me && info.st_uid != 0) {
    throw IntegrityError("refusing to run code from " + path.string() + ": owned by uid " +
                         std::to_string(info.st_uid) + ", not by you (uid " + std::to_string(me) +
                         ") or root; use a store you own (KILN_CACHE_DIR) or chown it");
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw IntegrityError("refusing to run code from " + path.string() + ": mode " + octal(info.st_mode) +
                         " lets others write it, so anyone could replace the code; fix with: chmod go-w " +
                         path.string());
  }
}

}  // namespace

void check_safe_to_execute(const boost::filesystem::path &file, const boost::filesystem::path &store_root) {
  check_one(file, true);
  const boost::filesystem::path root = store_root.lexically_normal();
  for (boost::filesystem::path dir = file.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    check_one(dir, false);
    if (dir.lexically_normal() == root || dir == dir.root_path()) break;
  }
}

}  // namespace kiln::store
