#include "files/remove_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace kiln::files {
namespace {

constexpr int kMaxDepth = 64;  // far deeper than anything kiln writes; bounds descriptors and stack

int open_directory_at(int parent, const char *name) {
  return ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
}

// The names in the directory open as `fd` (its own descriptor is left open and unread).
std::vector<std::string> names_of(int fd) {
  std::vector<std::string> names;
  const int listing = ::dup(fd);
  if (listing < 0) return names;
  DIR *dir = ::fdopendir(listing);
  if (dir == nullptr) {
    ::close(listing);
    return names;
  }
  while (const dirent *entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

// Empties the directory open as `fd` (already checked to be ours) of what we own.
void empty_directory(int fd, uid_t me, int depth) {
  for (const auto &name : names_of(fd)) {
    struct stat info {};
    if (::fstatat(fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(info.st_mode)) {
      // unlinkat removes a name, never what a link points to. A file of another user stays.
      if (info.st_uid == me) ::unlinkat(fd, name.c_str(), 0);
      continue;
    }
    if (depth >= kMaxDepth) continue;
    const int child = open_directory_at(fd, name.c_str());
    if (child < 0) continue;  // swapped for a link or a file since the fstatat: not entered
    struct stat opened {};
    const bool ours = ::fstat(child, &opened) == 0 && opened.st_uid == me;
    if (ours) empty_directory(child, me, depth + 1);
    ::close(child);
    // Removes it only if it is (still) an empty directory under this name.
    if (ours) ::unlinkat(fd, name.c_str(), AT_REMOVEDIR);
  }
}

}  // namespace

bool remove_tree(const boost::filesystem::path &dir) noexcept {
  try {
    const std::string parent_path = dir.has_parent_path() ? dir.parent_path().string() : std::string(".");
    const std::string name = dir.filename().string();
    if (name.empty() || name == "." || name == "..") return false;
    const int parent = ::open(parent_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    if (parent < 0) return false;
    const uid_t me = ::geteuid();
    bool gone = false;
    struct stat info {};
    if (::fstatat(parent, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0) {
      if (!S_ISDIR(info.st_mode)) {
        // Not a directory (a link put in its place): the name goes if it is ours, nothing it points to.
        gone = info.st_uid == me && ::unlinkat(parent, name.c_str(), 0) == 0;
      } else {
        const int fd = open_directory_at(parent, name.c_str());
        if (fd >= 0) {
          struct stat opened {};
          const bool ours = ::fstat(fd, &opened) == 0 && opened.st_uid == me;
          if (ours) empty_directory(fd, me, 1);
          ::close(fd);
          gone = ours && ::unlinkat(parent, name.c_str(), AT_REMOVEDIR) == 0;
        }
      }
    }
    ::close(parent);
    return gone;
  } catch (...) {  // a name's allocation failed: what is left stays for the next sweep
    return false;
  }
}

}  // namespace kiln::files
