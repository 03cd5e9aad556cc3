#include "store/sweep.hpp"
#include "support/fault_point.hpp"

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <string>

#include <boost/filesystem/operations.hpp>

namespace kiln::store {
namespace {

bool process_alive(long pid) {
  if (pid <= 0) return true;  // unparsable: keep it, it may be someone's
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  // A killed builder whose parent has not reaped it yet is a zombie: it holds no lock and
  // will write nothing more, so its staging directory is dead too.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const std::size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

}  // namespace

int sweep_dead_staging(const ConsumerLayout &layout) {
  int removed = 0;
  boost::system::error_code error;
  const std::string prefix = kStagingPrefix;
  for (fs::directory_iterator it(layout.entries(), error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    long pid = 0;
    try {
      pid = std::stol(name.substr(prefix.size()));
    } catch (...) {
      continue;
    }
    if (process_alive(pid)) continue;
    boost::system::error_code ignored;
    KILN_FAULT_POINT("sweep.before_remove");
    if (fs::remove_all(it->path(), ignored) > 0) ++removed;
    KILN_FAULT_POINT("sweep.after_remove");
  }
  return removed;
}

}  // namespace kiln::store
