#include "load/mapped_files.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/file.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
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
  bool locked = true;          // holds the in-use flock; false only while kept idle (references 0)
  std::uint64_t resolution = 0;   // Storage serial of the resolution last loaded through fd (0: none)
  std::uint64_t released_at = 0;  // when it was last kept idle, to close the least recently used
  std::uint32_t generation = 0;   // fork_generation when this process took it (older: inherited)
};

// Counts fork()s in this process's line: a descriptor inherited from the parent shares its open
// file description, and with it the parent's in-use flock. The child must never unlock it (that
// would release the parent's lock) nor reuse it idle: it closes its copy instead.
std::atomic<std::uint32_t> fork_generation{0};
void note_fork() noexcept { fork_generation.fetch_add(1, std::memory_order_relaxed); }
bool inherited(const MappedFile &file) noexcept {
  return file.generation != fork_generation.load(std::memory_order_relaxed);
}

// Idle descriptors kept for the next load of their resolution: a controller reloading a few
// plugins reuses theirs; a host cycling through many keeps at most this many open.
constexpr std::size_t kMaxIdle = 8;

// A few files at a time (the plugins a process has loaded), searched linearly: unlike a map,
// a load and unload of a file allocate nothing once the vector has grown.
struct MappedFiles {
  std::mutex mutex;
  std::vector<MappedFile> files;
  std::uint64_t clock = 0;  // counts idle keeps

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
  MappedFile *by_resolution(std::uint64_t resolution) {
    for (auto &file : files) {
      if (file.resolution == resolution) return &file;
    }
    return nullptr;
  }
  void remove(MappedFile *file) {
    *file = files.back();  // order does not matter
    files.pop_back();
  }
};

MappedFiles &mapped_files() {
  static MappedFiles *files = [] {
    ::pthread_atfork(nullptr, nullptr, &note_fork);
    return new MappedFiles;  // never destroyed: unloads may run at exit
  }();
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

int share_mapped_fd(files::UniqueFd &verified, std::uint64_t device, std::uint64_t inode,
                    std::uint64_t resolution) {
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  MappedFile *file = files.by_file(device, inode);
  if (file == nullptr) {
    files.files.reserve(files.files.size() + 1);  // may throw: before the descriptor is taken over
    files.files.push_back(
        {device, inode, verified.release(), 0, false, true, 0, 0, fork_generation.load(std::memory_order_relaxed)});
    file = &files.files.back();
  } else if (!file->locked) {
    // Kept idle (here or in the parent before a fork), nothing loaded under its name: the
    // verified descriptor, which holds the in-use lock, takes its place.
    ::close(file->fd);
    file->fd = verified.release();
    file->locked = true;
    file->generation = fork_generation.load(std::memory_order_relaxed);
  }
  verified.reset();  // another descriptor of this inode serves
  ++file->references;
  if (resolution != 0) file->resolution = resolution;
  return file->fd;
}

KeptFd reuse_kept_fd(std::uint64_t resolution) noexcept {
  if (resolution == 0) return {};
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  MappedFile *file = files.by_resolution(resolution);
  if (file == nullptr || inherited(*file)) return {};  // the parent's: a fresh open of our own
  const bool idle = !file->locked;
  file->locked = true;  // from here the caller's to take (release_mapped_fd lets it go)
  ++file->references;
  return {file->fd, file->device, file->inode, idle};
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

namespace {

// One reference dropped (the caller holds the table's lock). The last one closes the descriptor,
// or keeps it idle without its lock when a resolution may load it again, unless glibc still
// has the library loaded under its name (kept mapped, an alias).
void drop_reference(MappedFiles &files, MappedFile *file, const void *probe) noexcept {
  if (file->references == 0) return;
  if (--file->references != 0 || file->alias) return;
  if (loaded_under(file->fd, probe)) return;
  if (file->resolution == 0 || inherited(*file)) {
    ::close(file->fd);
    files.remove(file);
    return;
  }
  ::flock(file->fd, LOCK_UN);  // gc may evict it now; the next load takes the lock again
  file->locked = false;
  file->released_at = ++files.clock;
  MappedFile *oldest = nullptr;
  std::size_t idle = 0;
  for (auto &other : files.files) {
    if (other.locked) continue;
    ++idle;
    if (oldest == nullptr || other.released_at < oldest->released_at) oldest = &other;
  }
  if (idle > kMaxIdle) {
    ::close(oldest->fd);
    files.remove(oldest);
  }
}

}  // namespace

void release_mapped_fd(int fd, const void *probe) noexcept {
  if (fd < 0) return;
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  if (MappedFile *file = files.by_fd(fd)) drop_reference(files, file, probe);
}

void forget_kept_fd(int fd, bool still_ours) noexcept {
  MappedFiles &files = mapped_files();
  std::lock_guard<std::mutex> lock(files.mutex);
  MappedFile *file = files.by_fd(fd);
  if (file == nullptr) return;
  if (!still_ours) {
    files.remove(file);  // the number names another file now: not kiln's to close
    return;
  }
  file->resolution = 0;  // no later load reuses it; closed at its last release
  drop_reference(files, file, nullptr);
}

}  // namespace kiln::load
