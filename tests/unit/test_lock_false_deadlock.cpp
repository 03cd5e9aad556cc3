// fcntl record locks belong to processes, so the kernel's deadlock detection sees a
// multi-threaded host as one owner: while one of its threads waits for a lock that process P
// holds, P asking for any lock another thread of the host holds looks like a cycle and fails
// with EDEADLK, though no deadlock exists (kiln always takes an input-key lock before the
// manifest lock, never the other way round). Found by the reliability suite's concurrency test
// (kiln build: "cannot lock .../manifest.lock: Resource deadlock avoided").
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <kiln/errors.hpp>

#include "files/locks.hpp"
#include "support/fixtures.hpp"

using kiln::test::TempDir;
namespace fs = boost::filesystem;

TEST_CASE("locks: a host thread waiting for a lock never makes another process's lock fail with EDEADLK") {
  TempDir dir;
  const fs::path key_lock = dir / "key.lock", manifest_lock = dir / "manifest.lock";
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  // Process P: holds the key lock, then (once a host thread waits for it) asks for the
  // manifest lock, which another host thread holds for a while. It must wait, not fail.
  const pid_t p = ::fork();
  REQUIRE(p >= 0);
  if (p == 0) {
    int code = 0;
    try {
      kiln::files::FileLock key(key_lock);
      (void)!::write(ready[1], "k", 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      kiln::files::FileLock manifest(manifest_lock);
    } catch (const kiln::Error &error) {
      code = std::string(error.what()).find("deadlock") != std::string::npos ? 3 : 4;
    }
    ::_exit(code);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);  // P holds the key lock
  std::thread holder([&] {
    kiln::files::FileLock manifest(manifest_lock);
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  });
  std::thread waiter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kiln::files::FileLock key(key_lock);  // blocks until P exits
  });
  int status = 0;
  REQUIRE(::waitpid(p, &status, 0) == p);
  holder.join();
  waiter.join();
  ::close(ready[0]);
  ::close(ready[1]);
  REQUIRE(WIFEXITED(status));
  CHECK_MESSAGE(WEXITSTATUS(status) != 3, "the other process's lock failed with EDEADLK (a false deadlock)");
  CHECK(WEXITSTATUS(status) == 0);
}
