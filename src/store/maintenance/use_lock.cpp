#include "store/maintenance/use_lock.hpp"

#include <sys/file.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include <kiln/errors.hpp>

namespace kiln::store {

void hold_in_use(int fd, const std::string &file) {
  std::optional<std::chrono::steady_clock::time_point> deadline;  // from the first refusal: none on success
  while (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return;  // a file system without flock: loads still work, gc cannot tell
    const auto now = std::chrono::steady_clock::now();
    if (!deadline) deadline = now + std::chrono::seconds(1);
    if (now >= *deadline) {
      throw IoError("cannot load " + file + ": kiln gc has held it for over a second (evicting it); load again");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool try_hold_in_use(int fd) noexcept {
  for (;;) {
    if (::flock(fd, LOCK_SH | LOCK_NB) == 0) return true;
    if (errno != EINTR) return errno != EWOULDBLOCK;  // no flock on this file system: as hold_in_use
  }
}

void check_not_evicted(std::uint64_t links, const std::string &file) {
  if (links == 0) {
    throw NotFoundError(file + " was evicted by kiln gc while this load opened it; load again (a build or publish "
                        "puts it back)");
  }
}

bool lock_unused(int fd) noexcept {
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EINTR) return false;
  }
}

}  // namespace kiln::store
