#include "support/swap_fixture.hpp"

#include <dirent.h>

#include <cstddef>
#include <fstream>
#include <sstream>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// libasan and libtsan export it; g++ ships no header declaring it (clang's allocator_interface.h).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#define KILN_TEST_SANITIZER 1
#else
#define KILN_TEST_SANITIZER 0
#endif

namespace kiln::test {

ProcessResources ProcessResources::now() {
  ProcessResources resources;
  if (DIR *fds = ::opendir("/proc/self/fd")) {
    while (::readdir(fds) != nullptr) ++resources.fds;
    ::closedir(fds);
  }
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
#if KILN_TEST_SANITIZER
    // "address perms offset dev inode path": a file's mapping has an inode; the sanitizer
    // allocator maps anonymous regions as its quarantine fills, whatever the code under test does.
    std::istringstream fields(line);
    std::string address, perms, offset, device;
    unsigned long inode = 0;
    if (!(fields >> address >> perms >> offset >> device >> inode) || inode == 0) continue;
#endif
    ++resources.mappings;
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) resources.rss_kb = std::stoul(line.substr(6));
  }
#if KILN_TEST_SANITIZER
  resources.heap_kb = __sanitizer_get_current_allocated_bytes() / 1024;
  resources.heap_measure = "sanitizer allocator's live bytes";
#else
  resources.heap_kb = resources.rss_kb;
#endif
  return resources;
}

}  // namespace kiln::test
