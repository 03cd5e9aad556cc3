#include "load/mapped_files.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstring>

#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace kiln::load {
namespace {

struct MappedFile {
  int fd = -1;
  std::size_t references = 0;  // Modules loaded through fd and not yet unloaded
  bool alias = false;          // glibc holds the library under another name: never closed
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

std::string name_of(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Whether the loader's list holds a library under this descriptor's name (kept mapped).
bool loaded_under(int fd) {
  struct Search {
    std::string name;
    bool found = false;
  } search{name_of(fd)};
  ::dl_iterate_phdr(
      [](dl_phdr_info *info, std::size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        s->found = info->dlpi_name != nullptr && s->name == info->dlpi_name;
        return s->found ? 1 : 0;
      },
      &search);
  return search.found;
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

void note_dlopen_name(int fd, void *handle) noexcept {
  link_map *map = nullptr;
  if (handle == nullptr || ::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return;
  try {
    if (map->l_name != nullptr && name_of(fd) == map->l_name) return;
    MappedFiles &files = mapped_files();
    std::lock_guard<std::mutex> lock(files.mutex);
    const auto key = files.file_of.find(fd);
    if (key != files.file_of.end()) files.by_file[key->second].alias = true;
  } catch (...) {  // std::string's allocation: keeping a descriptor open is the safe side
  }
}

void release_mapped_fd(int fd) noexcept {
  if (fd < 0) return;
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  const auto key = files.file_of.find(fd);
  if (key == files.file_of.end()) return;
  const auto file = files.by_file.find(key->second);
  if (file == files.by_file.end() || file->second.references == 0) return;
  if (--file->second.references != 0 || file->second.alias) return;
  try {
    if (loaded_under(fd)) return;
  } catch (...) {
    return;
  }
  ::close(fd);
  files.by_file.erase(file);
  files.file_of.erase(key);
}

}  // namespace kiln::load
