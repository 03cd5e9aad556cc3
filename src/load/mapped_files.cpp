#include "load/mapped_files.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace kiln::load {
namespace {

struct MappedFile {
  int fd = -1;
  std::size_t references = 0;  // Modules loaded through fd and not yet unloaded
};

struct MappedFiles {
  std::mutex mutex;
  std::map<std::pair<std::uint64_t, std::uint64_t>, MappedFile> by_file;  // (device, inode)
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> file_of;         // fd -> (device, inode)
};

MappedFiles &mapped_files() {
  static MappedFiles *files = new MappedFiles;  // never destroyed: unloads may run at exit
  return *files;
}

// Whether glibc still has a library under this descriptor's name (it was kept mapped).
bool loaded_under(int fd) {
  const std::string name = "/proc/self/fd/" + std::to_string(fd);
  void *still = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (still == nullptr) {
    ::dlerror();
    return false;
  }
  ::dlclose(still);
  return true;
}

}  // namespace

int share_mapped_fd(store::UniqueFd &verified, std::uint64_t device, std::uint64_t inode) {
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  MappedFile &file = files.by_file[{device, inode}];
  if (file.fd < 0) {
    file.fd = verified.release();
    files.file_of[file.fd] = {device, inode};
  }
  verified.reset();  // another descriptor of this inode serves
  ++file.references;
  return file.fd;
}

void release_mapped_fd(int fd) noexcept {
  if (fd < 0) return;
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  const auto key = files.file_of.find(fd);
  if (key == files.file_of.end()) return;
  const auto file = files.by_file.find(key->second);
  if (file == files.by_file.end() || file->second.references == 0) return;
  if (--file->second.references != 0 || loaded_under(fd)) return;
  ::close(fd);
  files.by_file.erase(file);
  files.file_of.erase(key);
}

}  // namespace kiln::load
