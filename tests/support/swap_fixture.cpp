#include "support/swap_fixture.hpp"

#include <dirent.h>

#include <fstream>

namespace kiln::test {

ProcessResources ProcessResources::now() {
  ProcessResources resources;
  if (DIR *fds = ::opendir("/proc/self/fd")) {
    while (::readdir(fds) != nullptr) ++resources.fds;
    ::closedir(fds);
  }
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) ++resources.mappings;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) resources.rss_kb = std::stoul(line.substr(6));
  }
  return resources;
}

}  // namespace kiln::test
