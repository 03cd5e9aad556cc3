// File locks across threads and processes: a thread asking for a held lock must never release
// it (POSIX record locks drop on *any* close of the file by the process), moves, timeouts,
// several paths and several spellings of one path. In the "concurrency" suite (run under TSan).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "files/locks.hpp"
#include "support/fixtures.hpp"
#include "support/checks.hpp"

using namespace kiln;
using kiln::test::TempDir;
namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

enum class Probe { free, held, error };

// Asks from another process whether `file` is locked, with POSIX record locks (F_SETLK, what
// kilns before open file description locks use) or open file description locks (F_OFD_SETLK).
// The child makes only async-signal-safe calls (this process may have threads) and exits,
// dropping whatever it took.
Probe probe_from_other_process(const fs::path &file, int command) {
  const std::string path = file.string();
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) ::_exit(2);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    if (::fcntl(fd, command, &lock) == 0) ::_exit(0);
    ::_exit(errno == EAGAIN || errno == EACCES ? 1 : 2);
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return Probe::error;
  return WEXITSTATUS(status) == 0 ? Probe::free : WEXITSTATUS(status) == 1 ? Probe::held : Probe::error;
}

// Both kinds of lock another process could take must find it held.
bool held_for_other_processes(const fs::path &file) {
  return probe_from_other_process(file, F_SETLK) == Probe::held &&
         probe_from_other_process(file, F_OFD_SETLK) == Probe::held;
}

bool free_for_other_processes(const fs::path &file) {
  return probe_from_other_process(file, F_SETLK) == Probe::free &&
         probe_from_other_process(file, F_OFD_SETLK) == Probe::free;
}

using kiln::test::eventually;

}  // namespace

TEST_SUITE("concurrency") {
  TEST_CASE("locks: a thread asking for a lock another thread holds neither gets it nor releases it") {
    TempDir dir;
    const fs::path file = dir / "manifest.lock";
    auto a = std::make_unique<files::FileLock>(file);
    REQUIRE(held_for_other_processes(file));

    // Thread B tries: refused, and A's lock still holds against other processes.
    std::thread([&] { CHECK(files::FileLock::try_acquire(file) == nullptr); }).join();
    CHECK(held_for_other_processes(file));

    // Thread B blocks: it waits, and while it waits A's lock still holds.
    std::atomic<bool> b_holds{false};
    std::atomic<bool> b_may_release{false};
    std::thread b([&] {
      files::FileLock lock(file);
      b_holds = true;
      while (!b_may_release) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK_FALSE(b_holds.load());
    CHECK(held_for_other_processes(file));

    // A releases: B gets it (and holds it against other processes), then releases it.
    a.reset();
    CHECK(eventually([&] { return b_holds.load(); }, std::chrono::milliseconds(5000)));
    CHECK(held_for_other_processes(file));
    b_may_release = true;
    b.join();
    CHECK(free_for_other_processes(file));
  }

  TEST_CASE("locks: a lock held by another process excludes this one, and is free once that process releases it") {
    TempDir dir;
    const fs::path file = dir / "build.lock";
    int ready[2], done[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(done) == 0);
    const pid_t child = ::fork();
    if (child == 0) {
      {
        files::FileLock held(file);
        char byte = 1;
        (void)!::write(ready[1], &byte, 1);
        (void)!::read(done[0], &byte, 1);
      }
      ::_exit(0);
    }
    char byte = 0;
    REQUIRE(::read(ready[0], &byte, 1) == 1);
    CHECK(files::FileLock::try_acquire(file) == nullptr);
    const auto asked = Clock::now();
    CHECK(files::FileLock::try_acquire_for(file, std::chrono::milliseconds(150)) == nullptr);
    const double waited = std::chrono::duration<double>(Clock::now() - asked).count();
    CHECK(waited >= 0.14);
    CHECK(waited < 2.0);

    // Released while we wait: a waiter with a long timeout gets it soon after.
    std::thread release([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      (void)!::write(done[1], &byte, 1);
    });
    const auto waiting = Clock::now();
    const auto lock = files::FileLock::try_acquire_for(file, std::chrono::milliseconds(10000));
    const double got_after = std::chrono::duration<double>(Clock::now() - waiting).count();
    release.join();
    CHECK(lock != nullptr);
    CHECK(got_after < 2.0);
    CHECK(held_for_other_processes(file));
    ::waitpid(child, nullptr, 0);
    for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
  }

  TEST_CASE("locks: a POSIX record lock held by an older kiln excludes FileLock, in both directions") {
    TempDir dir;
    const fs::path file = dir / "manifest.lock";
    const std::string path = file.string();
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t old_kiln = ::fork();  // locks as Boost.Interprocess does: F_SETLK, whole file
    if (old_kiln == 0) {
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      struct flock lock {};
      lock.l_type = F_WRLCK;
      lock.l_whence = SEEK_SET;
      const char ok = (fd >= 0 && ::fcntl(fd, F_SETLK, &lock) == 0) ? 1 : 0;
      (void)!::write(ready[1], &ok, 1);
      for (;;) ::pause();
    }
    char ok = 0;
    REQUIRE(::read(ready[0], &ok, 1) == 1);
    REQUIRE(ok == 1);
    CHECK(files::FileLock::try_acquire(file) == nullptr);
    CHECK(files::FileLock::try_acquire_for(file, std::chrono::milliseconds(100)) == nullptr);
    ::kill(old_kiln, SIGKILL);
    ::waitpid(old_kiln, nullptr, 0);
    const auto lock = files::FileLock::try_acquire(file);
    CHECK(lock != nullptr);
    CHECK(probe_from_other_process(file, F_SETLK) == Probe::held);
    ::close(ready[0]);
    ::close(ready[1]);
  }

  TEST_CASE("locks: a moved lock stays held; the moved-from object releases nothing") {
    TempDir dir;
    const fs::path first = dir / "first.lock";
    const fs::path second = dir / "second.lock";
    auto original = std::make_unique<files::FileLock>(first);
    files::FileLock moved(std::move(*original));
    CHECK(moved.held());
    CHECK_FALSE(original->held());
    original.reset();  // destroying the moved-from object releases nothing
    CHECK(held_for_other_processes(first));

    files::FileLock other(second);
    other = std::move(moved);  // drops `second`, takes over `first`
    CHECK(free_for_other_processes(second));
    CHECK(held_for_other_processes(first));
    { files::FileLock gone = std::move(other); }
    CHECK(free_for_other_processes(first));
  }

  TEST_CASE("locks: several paths are independent; another spelling of a held file is the same lock") {
    TempDir dir;
    fs::create_directories(dir / "a");
    fs::create_directories(dir / "b");
    const fs::path a = dir / "a" / "x.lock";
    const fs::path b = dir / "b" / "x.lock";
    files::FileLock hold_a(a);
    {
      files::FileLock hold_b(b);  // one thread, two paths
      CHECK(held_for_other_processes(a));
      CHECK(held_for_other_processes(b));
    }
    CHECK(free_for_other_processes(b));
    CHECK(held_for_other_processes(a));

    // The same file through "..", and through a symbolic link to its directory.
    fs::create_symlink(dir / "a", dir / "link");
    std::thread([&] {
      CHECK(files::FileLock::try_acquire(dir / "b" / ".." / "a" / "x.lock") == nullptr);
      CHECK(files::FileLock::try_acquire(dir / "link" / "x.lock") == nullptr);
    }).join();
    CHECK(held_for_other_processes(a));
  }

  TEST_CASE("locks: release unlocks even while a forked child still shares the descriptor") {
    TempDir dir;
    const fs::path file = dir / "shared.lock";
    auto lock = std::make_unique<files::FileLock>(file);
    const pid_t child = ::fork();
    if (child == 0) {
      ::pause();  // keeps its copy of every descriptor until killed
      ::_exit(0);
    }
    lock.reset();
    CHECK(free_for_other_processes(file));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }

  TEST_CASE("locks: a lock file that is a FIFO or a symbolic link is refused by name, without hanging") {
    TempDir dir;
    const fs::path fifo = dir / "fifo.lock";
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    try {
      files::FileLock lock(fifo);
      FAIL("locked a FIFO");
    } catch (const IoError &error) {
      CHECK(std::string(error.what()).find(fifo.string()) != std::string::npos);
      CHECK(std::string(error.what()).find("not a regular file") != std::string::npos);
    }
    kiln::test::write_text(dir / "target", "");
    fs::create_symlink(dir / "target", dir / "link.lock");
    try {
      files::FileLock lock(dir / "link.lock");
      FAIL("followed a symbolic link");
    } catch (const IoError &error) {
      CHECK(std::string(error.what()).find("symbolic link") != std::string::npos);
    }
  }

  TEST_CASE("locks: create_held makes a lock file that is never visible unheld; try_acquire_existing never creates one") {
    TempDir dir;
    const fs::path file = dir / "fresh.lock";
    files::FileLock lock = files::FileLock::create_held(file);
    CHECK(fs::exists(file));
    CHECK(held_for_other_processes(file));
    bool missing = true;
    CHECK(files::FileLock::try_acquire_existing(file, &missing) == nullptr);
    CHECK_FALSE(missing);
    CHECK(files::FileLock::try_acquire_existing(dir / "absent.lock", &missing) == nullptr);
    CHECK(missing);
    CHECK_FALSE(fs::exists(dir / "absent.lock"));  // never created
    // Only the lock file itself is left in the directory (no temporary name).
    int files = 0;
    for (fs::directory_iterator it(dir.path()), end; it != end; ++it) ++files;
    CHECK(files == 1);
  }
}
