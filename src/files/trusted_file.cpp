#include "files/trusted_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <kiln/errors.hpp>

#include "files/files.hpp"

namespace kiln::files {

void check_trusted_file(const struct stat &info, const std::string &file, const std::string &what) {
  const uid_t me = ::geteuid();
  if (info.st_uid != me && info.st_uid != 0) {
    throw UsageError(what + " " + file + " is owned by uid " + std::to_string(info.st_uid) + ", not by you (uid " +
                     std::to_string(me) + ") or root: it decides which code kiln trusts, so nobody else may own it "
                     "(own it yourself: chown, or use a copy you own)");
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    throw UsageError(what + " " + file + " is writable by group or others (mode " + mode +
                     "): it decides which code kiln trusts, so nobody else may edit it (chmod go-w " + file + ")");
  }
}

std::string read_trusted_file(const boost::filesystem::path &file, const std::string &what, std::uint64_t max_bytes,
                              bool follow_links, struct stat *opened) {
  struct stat info {};
  std::string bytes;
  try {
    bytes = read_file(file, FileOrigin::input, max_bytes, &info, follow_links ? 0 : O_NOFOLLOW);
  } catch (const IoError &) {
    struct stat link {};
    if (!follow_links && ::lstat(file.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      throw UsageError(what + " " + file.string() + " is a symbolic link: name the file itself (a link's target "
                       "can be changed by whoever owns the link)");
    }
    throw;
  }
  check_trusted_file(info, file.string(), what);
  if (opened != nullptr) *opened = info;
  return bytes;
}

}  // namespace kiln::files
