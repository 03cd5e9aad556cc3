// What identifies a file's current contents without reading them: device, inode, size and
// the modification and change times. Any write through the file system changes ctime (which
// no user can set back), and kiln replaces files by rename (new inode), so an equal identity
// means the bytes seen before are still the bytes there.
#pragma once

#include <cstdint>
#include <optional>

struct stat;

#include <boost/filesystem/path.hpp>

namespace kiln::files {

struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  friend bool operator==(const FileIdentity &a, const FileIdentity &b) {
    return a.device == b.device && a.inode == b.inode && a.size == b.size && a.mtime_ns == b.mtime_ns &&
           a.ctime_ns == b.ctime_ns;
  }
  friend bool operator!=(const FileIdentity &a, const FileIdentity &b) { return !(a == b); }
};

std::optional<FileIdentity> identify(const boost::filesystem::path &file);  // nullopt when absent
std::optional<FileIdentity> identify(const char *file);                      // the same, no path object
std::optional<FileIdentity> identify_fd(int fd);
FileIdentity identity_of(const struct stat &info);

}  // namespace kiln::files
