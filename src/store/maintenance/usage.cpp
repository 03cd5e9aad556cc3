#include "store/maintenance/usage.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files/files.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

fs::path use_marker(const ConsumerLayout &layout, const std::string &content_key) {
  return layout.dir() / "used" / content_key;
}

void record_use(const ConsumerLayout &layout, const std::string &content_key) noexcept {
  try {
    const fs::path marker = use_marker(layout, content_key);
    struct stat info {};
    const std::time_t now = std::time(nullptr);
    if (::lstat(marker.c_str(), &info) == 0) {
      if (now - info.st_mtime < std::chrono::duration_cast<std::chrono::seconds>(kUseRecordGranularity).count()) return;
      if (S_ISREG(info.st_mode)) ::utimensat(AT_FDCWD, marker.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
      return;
    }
    files::create_directories(marker.parent_path());
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  } catch (...) {
    // no record: gc then judges the entry by its creation time
  }
}

std::optional<std::time_t> recorded_use(const ConsumerLayout &layout, const std::string &content_key) {
  struct stat info {};
  if (::lstat(use_marker(layout, content_key).c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return info.st_mtime;
}

}  // namespace kiln::store
