#include "load/mapped_files.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

#include <mutex>
#include <utility>
#include <vector>

namespace kiln::load {
namespace {

struct MappedFile {
  std::uint64_t device = 0, inode = 0;
  int fd = -1;
  std::size_t references = 0;  // Modules loaded through fd and not yet unloaded
  bool alias = false;          // glibc holds the library under another name: never closed
};

// A few files at a time (the plugins a process has loaded), searched linearly: unlike a map,
// a load and unload of a file allocate nothing once the vector has grown.
struct MappedFiles {
  std::mutex mutex;
  std::vector<MappedFile> files;

  MappedFile *by_file(std::uint64_t device, std::uint64_t inode) {
    for (auto &file : files) {
      if (file.device == device && file.inode == inode) return &file;
    }
    return nullptr;
  }
  MappedFile *by_fd(int fd) {
    for (auto &file : files) {
      if (file.fd == fd) return &file;
    }
    return nullptr;
  }
};

MappedFiles &mapped_files() {
  static MappedFiles *files = new MappedFiles;  // never destroyed: unloads may run at exit
  return *files;
}

// Whether the loader's list holds a library under this descriptor's name (kept mapped). strcmp,
// not a std::string compare: the list holds every library of the process (dozens in a host
// linking curl and friends), and strcmp stops at the first differing byte.
bool listed_under(const DescriptorName &name) noexcept {
  struct Search {
    const char *name;
    bool found = false;
  } search{name.c_str()};
  ::dl_iterate_phdr(
      [](dl_phdr_info *info, std::size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        s->found = info->dlpi_name != nullptr && std::strcmp(s->name, info->dlpi_name) == 0;
        return s->found ? 1 : 0;
      },
      &search);
  return search.found;
}

// Whether nothing is mapped any more at `probe`, an address inside the library loaded through
// the descriptor, asked of glibc's _dl_find_object (2.35+: lock-free, no walk of the list, whose
// link maps an unload would otherwise read one by one). Then that library is gone, and it is the
// only one that can be loaded under the descriptor's name (every load of the file goes through
// the descriptor), so there is nothing to walk the list for. Looked up at run time, so that kiln
// still runs on an older glibc (which always walks). Where something is mapped there (the
// library kept mapped, or another one loaded there since), the walk answers: only it reads
// other libraries' link maps under the loader's lock.
bool unmapped_at(const void *probe) noexcept {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
  using FindObject = int (*)(void *, dl_find_object *);
  static const auto find_object = reinterpret_cast<FindObject>(::dlsym(RTLD_DEFAULT, "_dl_find_object"));
  dl_find_object found{};
  return find_object != nullptr && probe != nullptr && find_object(const_cast<void *>(probe), &found) != 0;
#else
  (void)probe;
  return false;
#endif
}

bool loaded_under(int fd, const void *probe) noexcept {
  return !unmapped_at(probe) && listed_under(descriptor_name(fd));
}

}  // namespace

DescriptorName descriptor_name(int fd) noexcept {
  static constexpr char kPrefix[] = "/proc/self/fd/";
  DescriptorName name{};
  std::memcpy(name.text, kPrefix, sizeof kPrefix - 1);
  char *end = std::to_chars(name.text + sizeof kPrefix - 1, name.text + sizeof name.text - 1, fd).ptr;
  *end = '\0';
  return name;
}

int share_mapped_fd(store::UniqueFd &verified, std::uint64_t device, std::uint64_t inode) {
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  MappedFile *file = files.by_file(device, inode);
  if (file == nullptr) {
    files.files.reserve(files.files.size() + 1);  // may throw: before the descriptor is taken over
    files.files.push_back({device, inode, verified.release(), 0, false});
    file = &files.files.back();
  }
  verified.reset();  // another descriptor of this inode serves
  ++file->references;
  return file->fd;
}

const void *note_dlopen_name(int fd, void *handle) noexcept {
  link_map *map = nullptr;
  if (handle == nullptr || ::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return nullptr;
  try {
    if (map->l_name != nullptr && std::strcmp(descriptor_name(fd).c_str(), map->l_name) == 0) return map->l_ld;
    MappedFiles &files = mapped_files();
    std::lock_guard<std::mutex> lock(files.mutex);
    if (MappedFile *file = files.by_fd(fd)) file->alias = true;
  } catch (...) {  // the mutex: keeping a descriptor open is the safe side
  }
  return nullptr;
}

void release_mapped_fd(int fd, const void *probe) noexcept {
  if (fd < 0) return;
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  MappedFile *file = files.by_fd(fd);
  if (file == nullptr || file->references == 0) return;
  if (--file->references != 0 || file->alias) return;
  if (loaded_under(fd, probe)) return;
  ::close(fd);
  *file = files.files.back();  // order does not matter
  files.files.pop_back();
}

}  // namespace kiln::load
