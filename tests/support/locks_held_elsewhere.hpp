// Another process holding open file description locks until killed: a kiln writer in another
// process, or in a container sharing the store (a pid this process cannot see), mid-write.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <doctest/doctest.h>

namespace kiln::test {

// Forks a child that takes an exclusive OFD lock on each of `files` (created, with their
// directories, where missing), says so, and waits to be killed. The child makes only
// async-signal-safe calls.
class LocksHeldElsewhere {
 public:
  explicit LocksHeldElsewhere(const std::vector<boost::filesystem::path> &files) {
    std::vector<std::string> paths;
    for (const auto &file : files) {
      boost::filesystem::create_directories(file.parent_path());
      paths.push_back(file.string());
    }
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      char ok = 1;
      for (const auto &path : paths) {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        struct flock lock {};
        lock.l_type = F_WRLCK;
        lock.l_whence = SEEK_SET;
        if (fd < 0 || ::fcntl(fd, F_OFD_SETLK, &lock) != 0) ok = 0;
      }
      (void)!::write(ready[1], &ok, 1);
      for (;;) ::pause();
    }
    char ok = 0;
    REQUIRE(::read(ready[0], &ok, 1) == 1);
    REQUIRE(ok == 1);
    ::close(ready[0]);
    ::close(ready[1]);
  }
  ~LocksHeldElsewhere() { kill(); }
  LocksHeldElsewhere(const LocksHeldElsewhere &) = delete;
  LocksHeldElsewhere &operator=(const LocksHeldElsewhere &) = delete;

  // The holder dies: its locks go with it.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace kiln::test
