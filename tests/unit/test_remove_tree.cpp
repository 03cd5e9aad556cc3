// Removing store directories that another user may be changing while kiln walks them
// (files/remove_tree.hpp), and the sweep that uses it (store/sweep.hpp).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include "store/layout.hpp"
#include "files/remove_tree.hpp"
#include "store/sweep.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"

namespace {

namespace fs = boost::filesystem;
using kiln::test::TempDir;
using kiln::test::write_text;

constexpr uid_t kOtherUser = 65534;  // nobody

// Another user's files can be made here (root, or CAP_CHOWN and CAP_SETUID).
std::optional<std::string> no_other_user() {
  if (::geteuid() != 0) return std::string("needs root, to act as uid 65534 (nobody) beside the test's own user");
  const TempDir dir;
  write_text(dir / "probe", "");
  if (::chown((dir / "probe").c_str(), kOtherUser, kOtherUser) != 0) {
    return std::string("this root cannot chown a file to uid 65534 (a user namespace without that uid mapped)");
  }
  return std::nullopt;
}

int count_files(const fs::path &dir) {
  int count = 0;
  for (fs::directory_iterator it(dir), end; it != end; ++it) ++count;
  return count;
}

fs::path victim_with_files(const TempDir &dir, int files) {
  const fs::path victim = dir / "victim";
  fs::create_directory(victim);
  for (int i = 0; i < files; ++i) write_text(victim / ("f" + std::to_string(i)), "keep");
  return victim;
}

}  // namespace

TEST_CASE("remove_tree: removes a nested tree it owns and says so") {
  const TempDir dir;
  const fs::path tree = dir / "tree";
  fs::create_directories(tree / "a" / "b" / "c");
  write_text(tree / "a" / "b" / "c" / "file", "x");
  write_text(tree / "top", "x");
  ::chmod((tree / "a" / "b").c_str(), 0555);  // read-only directories are ours to empty too
  CHECK(kiln::files::remove_tree(tree));
  CHECK_FALSE(fs::exists(fs::symlink_status(tree)));
  CHECK_FALSE(kiln::files::remove_tree(tree));  // already gone
}

TEST_CASE("remove_tree: a symlink inside is removed as a link; the directory and file it points to stay") {
  const TempDir dir;
  const fs::path victim = victim_with_files(dir, 3);
  const fs::path tree = dir / "tree";
  fs::create_directory(tree);
  fs::create_directory_symlink(victim, tree / "to-dir");
  fs::create_symlink(victim / "f0", tree / "to-file");
  CHECK(kiln::files::remove_tree(tree));
  CHECK(count_files(victim) == 3);
  CHECK(fs::exists(victim / "f0"));
}

TEST_CASE("remove_tree: a symlink given as the tree is unlinked, never followed") {
  const TempDir dir;
  const fs::path victim = victim_with_files(dir, 3);
  fs::create_directory_symlink(victim, dir / "link");
  CHECK(kiln::files::remove_tree(dir / "link"));
  CHECK_FALSE(fs::exists(fs::symlink_status(dir / "link")));
  CHECK(count_files(victim) == 3);
}

TEST_CASE("remove_tree: another user's directory and files inside the tree are left alone" *
          kiln::test::skip_if(no_other_user)) {
  const TempDir dir;
  const fs::path tree = dir / "tree";
  fs::create_directories(tree / "theirs");
  write_text(tree / "theirs" / "f", "x");
  write_text(tree / "their-file", "x");
  write_text(tree / "mine", "x");
  REQUIRE(::chown((tree / "theirs").c_str(), kOtherUser, kOtherUser) == 0);
  REQUIRE(::chown((tree / "their-file").c_str(), kOtherUser, kOtherUser) == 0);
  CHECK_FALSE(kiln::files::remove_tree(tree));  // not empty: theirs stays
  CHECK(fs::exists(tree / "theirs" / "f"));
  CHECK(fs::exists(tree / "their-file"));
  CHECK_FALSE(fs::exists(tree / "mine"));
}

TEST_SUITE("bad_inputs") {

// A co-user of a store that others may write (mode 0777) plants a staging directory with a free
// lock and keeps swapping a subdirectory, whose files are named like those of a folder of ours,
// for a symlink to that folder. A sweep that removes by path follows the swap and deletes our
// files; kiln's sweep must delete nothing outside the store, whatever the timing.
TEST_CASE("sweep: a co-user swapping a staging subdirectory for a symlink cannot make kiln delete outside the store" *
          kiln::test::skip_if(no_other_user)) {
  const TempDir dir;
  constexpr int kFiles = 200;
  const fs::path victim = victim_with_files(dir, kFiles);
  const fs::path cache = dir / "cache";
  const kiln::store::ConsumerLayout layout(cache, "c");
  fs::create_directories(layout.entries());
  for (const fs::path &each : {cache, cache / "consumers", layout.dir(), layout.entries()}) ::chmod(each.c_str(), 0777);
  const fs::path staging = layout.entries() / (std::string(kiln::store::kStagingPrefix) +
                                               kiln::store::kStagingVersionTag + "0123456789abcdef");

  const pid_t attacker = ::fork();
  REQUIRE(attacker >= 0);
  if (attacker == 0) {
    if (::setgid(kOtherUser) != 0 || ::setuid(kOtherUser) != 0) ::_exit(3);
    // The directory is filled outside the staging directory (in the cache root, which it may
    // write), so that a sweep meets it only when it is moved in.
    const std::string s = staging.string(), real = (cache / "real").string(), d = s + "/d",
                      lock = s + "/" + kiln::store::kStagingLockFile;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);  // never outlives the test
    const auto create = [](const std::string &file) { ::close(::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644)); };
    while (std::chrono::steady_clock::now() < until) {
      ::mkdir(real.c_str(), 0755);
      for (int i = 0; i < kFiles; ++i) create(real + "/f" + std::to_string(i));  // the victim's names
      ::mkdir(s.c_str(), 0755);
      ::rename(real.c_str(), d.c_str());
      create(lock);  // a free lock: "a dead writer"  // d: a real directory a sweep starts to empty ...
      ::usleep(1000);
      ::rename(d.c_str(), real.c_str());
      ::symlink(victim.c_str(), d.c_str());  // ... then a link to the victim, whose files have the same names
      ::usleep(2000);
      ::unlink(d.c_str());
    }
    ::_exit(0);
  }
  int sweeps = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3000);
  while (std::chrono::steady_clock::now() < until && count_files(victim) == kFiles) {
    kiln::store::sweep_leftovers(layout, std::chrono::seconds(0), std::chrono::seconds(0));
    ++sweeps;
  }
  ::kill(attacker, SIGKILL);
  int status = 0;
  ::waitpid(attacker, &status, 0);
  INFO("sweeps run: " << sweeps);
  CHECK(sweeps > 0);
  CHECK(count_files(victim) == kFiles);
  CHECK(fs::exists(staging));  // another user's directory: not ours to remove (kiln verify reports it)
}

}  // TEST_SUITE
