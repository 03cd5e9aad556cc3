#include "files/file_identity.hpp"

#include <sys/stat.h>

namespace kiln::files {
FileIdentity identity_of(const struct stat &info) {
  FileIdentity id;
  id.device = static_cast<std::uint64_t>(info.st_dev);
  id.inode = static_cast<std::uint64_t>(info.st_ino);
  id.size = static_cast<std::uint64_t>(info.st_size);
  id.mtime_ns = static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<std::int64_t>(info.st_ctim.tv_sec) * 1000000000 + info.st_ctim.tv_nsec;
  return id;
}

std::optional<FileIdentity> identify(const boost::filesystem::path &file) {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) return std::nullopt;
  return identity_of(info);
}

std::optional<FileIdentity> identify(const char *file) {
  struct stat info {};
  if (::stat(file, &info) != 0) return std::nullopt;
  return identity_of(info);
}

std::optional<FileIdentity> identify_fd(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return std::nullopt;
  return identity_of(info);
}

}  // namespace kiln::files
