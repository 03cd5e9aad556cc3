// Staging directories: created exclusively, alive exactly while a lock inside them is held (a
// pid means nothing across pid namespaces), swept only when that lock can be taken.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <optional>
#include <string>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>

#include "files/digest.hpp"
#include "files/files.hpp"
#include "store/layout.hpp"
#include "store/local_store.hpp"
#include "store/sweep.hpp"
#include "support/fixtures.hpp"
#include "support/locks_held_elsewhere.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {


// Is the lock inside `staging` held by someone, as seen from a fresh process?
bool held_from_another_process(const fs::path &staging) {
  const std::string lock_file = (staging / ".staging.lock").string();
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(lock_file.c_str(), O_RDWR | O_CLOEXEC);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    ::_exit(fd >= 0 && ::fcntl(fd, F_OFD_SETLK, &lock) != 0 && errno == EAGAIN ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("staging: a live build's staging directory is never swept, whatever pid its name shows") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  const fs::path entries = dir / "cache" / "consumers" / "tests" / "store";
  // Named as by a kiln whose pid this process cannot see (another pid namespace); no such pid here.
  const fs::path live = entries / ".staging-999999999-1-2";
  fs::create_directories(live);
  kiln::test::write_text(live / "half.so", "being written");
  // Its writer, in a container sharing the cache, holds the lock inside it.
  kiln::test::LocksHeldElsewhere holder({live / store::kStagingLockFile});

  kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");  // sweeps before publishing
  CHECK(fs::exists(live / "half.so"));
  CHECK(held_from_another_process(live));  // the sweeper's look released nothing

  holder.kill();  // the build dies: its lock goes with it
  kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  CHECK_FALSE(fs::exists(live));
}

TEST_CASE("staging: a staging directory of this process survives sweeps from another thread and another process") {
  TempDir dir;
  const store::LocalStore cache({dir.path(), true, "test"});
  const store::ConsumerLayout layout = cache.layout("c");
  std::optional<store::Staging> staging(cache.stage("c", LogCallback()));
  const fs::path path = staging->dir();
  staging->write("lib.so", "x");

  std::thread([&] { CHECK(store::sweep_leftovers(layout, std::chrono::seconds(0)).staging_dirs == 0); }).join();
  CHECK(fs::exists(path / "lib.so"));
  CHECK(held_from_another_process(path));

  const pid_t child = ::fork();  // no other thread runs now: the child may call the library
  if (child == 0) ::_exit(store::sweep_leftovers(layout, std::chrono::seconds(0)).staging_dirs);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(fs::exists(path / "lib.so"));

  staging.reset();  // never committed: removed
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("staging: names are fresh and not pid-like; commit leaves no lock file in the entry") {
  TempDir dir;
  const store::LocalStore cache({dir.path(), true, "test"});
  store::Staging first = cache.stage("c", LogCallback());
  store::Staging second = cache.stage("c", LogCallback());
  const fs::path first_dir = first.dir(), second_dir = second.dir();
  CHECK(first_dir != second_dir);
  for (const auto &path : {first_dir, second_dir}) {
    const std::string name = path.filename().string();
    CHECK(name.rfind(".staging-v2-", 0) == 0);
    // Older kilns parse a number after ".staging-" as the owner's pid: there is none to parse.
    CHECK_FALSE(std::isdigit(static_cast<unsigned char>(name[std::string(".staging-").size()])));
    CHECK(fs::exists(path / ".staging.lock"));
  }
  const std::string bytes = "plugin bytes";
  const std::string key = "0123456789abcdef0123456789abcdef";
  const store::EntryMeta meta{key, "plugin", "lib.so", files::digest_hex(bytes), bytes.size(), "now", {}, {}};
  for (auto *staging : {&first, &second}) {
    staging->write("lib.so", bytes, 0755);
    staging->write_records(meta, "{}\n");
  }
  const fs::path entry = cache.layout("c").entry(key);
  CHECK(cache.commit_entry(std::move(first), LogCallback()));
  CHECK(fs::exists(entry / "lib.so"));
  CHECK_FALSE(fs::exists(entry / ".staging.lock"));
  CHECK_FALSE(fs::exists(first_dir));
  CHECK_FALSE(cache.commit_entry(std::move(second), LogCallback()));  // an intact entry exists: this copy is dropped
  CHECK_FALSE(fs::exists(second_dir));
}

TEST_CASE("sweep: a killed holder's staging directory goes at once; lock-less ones only after the grace") {
  TempDir dir;
  const store::LocalStore cache({dir.path(), true, "test"});
  const store::ConsumerLayout layout = cache.layout("c");
  files::create_directories(layout.entries());

  // A real staging directory in a process that is then SIGKILLed.
  int path_pipe[2];
  REQUIRE(::pipe(path_pipe) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const store::Staging staging = cache.stage("c", LogCallback());
    const std::string path = staging.dir().string() + "\n";
    (void)!::write(path_pipe[1], path.data(), path.size());
    for (;;) ::pause();
  }
  std::string dead;
  char c = 0;
  while (::read(path_pipe[0], &c, 1) == 1 && c != '\n') dead += c;
  ::close(path_pipe[0]);
  ::close(path_pipe[1]);
  REQUIRE(fs::exists(dead));
  CHECK(held_from_another_process(dead));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  // Lock-less: a kiln from before staging locks, and an entry moved aside as damaged.
  const fs::path old_kiln = layout.entries() / ".staging-4242-0-7";
  const fs::path damaged = layout.entries() / ".staging-4242-1-9-damaged";
  // And one of this kiln's whose writer died before making its lock file.
  const fs::path lockless_v2 = layout.entries() / ".staging-v2-0123456789abcdef";
  fs::create_directories(old_kiln / "gen");
  fs::create_directories(damaged);
  fs::create_directories(lockless_v2);

  const store::SweepCounts first = store::sweep_leftovers(layout);
  CHECK(first.staging_dirs == 1);
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(old_kiln));     // modified just now: may be a live older kiln's
  CHECK(fs::exists(damaged));      // kept a while for inspection
  CHECK(fs::exists(lockless_v2));  // may be a writer between its mkdir and its lock

  // Past a minute (here: a bound of 0) a lock-less v2 directory is dead; the others wait a day.
  const store::SweepCounts minute = store::sweep_leftovers(layout, store::kLocklessStagingGrace, std::chrono::seconds(0));
  CHECK(minute.staging_dirs == 1);
  CHECK_FALSE(fs::exists(lockless_v2));
  CHECK(fs::exists(old_kiln));
  CHECK(fs::exists(damaged));

  const store::SweepCounts aged = store::sweep_leftovers(layout, std::chrono::seconds(0));
  CHECK(aged.staging_dirs == 2);
  CHECK_FALSE(fs::exists(old_kiln));
  CHECK_FALSE(fs::exists(damaged));
}
