// A warm load of a remembered resolution reuses the descriptor its last load kept
// (load/mapped_files.hpp): the file is not opened again, yet every guarantee of a fresh open
// holds. Idle, the descriptor holds no in-use lock (gc may evict the file); a replaced file, a
// changed entry or a descriptor the host closed behind kiln's back is never used; at most 8 are
// kept open.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>

#include <kiln/ext/example.h>
#include <kiln/gc.hpp>
#include <kiln/runtime.hpp>

#include "support/plugin_store.hpp"

using namespace kiln;
using namespace kiln::test;

namespace {

// The descriptor of this process that names `file`, -1 when none does.
int descriptor_naming(const std::string &file) {
  for (const auto &entry : fs::directory_iterator("/proc/self/fd")) {
    boost::system::error_code error;
    if (fs::read_symlink(entry.path(), error).string() == file) return std::stoi(entry.path().filename().string());
  }
  return -1;
}

// Whether gc could evict `file` now: nobody holds the in-use flock.
bool lockable_exclusively(const std::string &file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

}  // namespace

TEST_CASE("kept descriptors: reloading takes no new descriptor; idle, the file is free for gc, loaded it is held") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  const std::string key = publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY).content_key;
  const std::string file = runtime.resolve("tests", "example").file;
  { const Module first = runtime.load("tests", "example"); }
  const int kept = descriptor_naming(file);
  REQUIRE_MESSAGE(kept >= 0, "the unloaded plugin's descriptor is kept for the next load");
  CHECK(lockable_exclusively(file));  // idle: no in-use lock
  const std::size_t before = open_descriptors();
  for (int round = 0; round < 20; ++round) {
    const Module module = runtime.load("tests", "example");
    CHECK(module.report().resolution.content_key == key);
    CHECK(example_fma(module) == 7.0);
    CHECK_FALSE(lockable_exclusively(file));  // loaded: gc must skip it
  }
  CHECK(open_descriptors() == before);
  CHECK(descriptor_naming(file) == kept);
  CHECK(lockable_exclusively(file));
}

TEST_CASE("kept descriptors: gc evicts an unloaded entry whose descriptor is kept; the next load says it is gone") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  const std::string key = publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY).content_key;
  GcOptions everything;
  everything.max_bytes = 0;
  everything.include_named = true;
  {
    const Module loaded = runtime.load("tests", "example");
    const GcReport held = runtime.gc(everything);
    REQUIRE(held.items.size() == 1);
    CHECK(held.items.front().outcome == "kept: in use");
  }
  const GcReport report = runtime.gc(everything);
  REQUIRE(report.items.size() == 1);
  CHECK(report.items.front().outcome == "evicted");
  CHECK(report.items.front().content_key == key);
  const std::string message = error_of<NotFoundError>([&] { runtime.load("tests", "example"); });
  CHECK(message.find("example") != std::string::npos);
}

TEST_CASE("kept descriptors: an artifact file replaced in its entry is opened afresh, never served from the old "
          "descriptor") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  const std::string file = runtime.resolve("tests", "example").file;
  { const Module first = runtime.load("tests", "example"); }
  REQUIRE(descriptor_naming(file) >= 0);
  const std::size_t before = open_descriptors();

  SUBCASE("the same bytes, a new inode: loads, and the old descriptor is closed") {
    fs::permissions(fs::path(file).parent_path(), fs::owner_all);
    fs::copy_file(file, file + ".new");
    fs::rename(file + ".new", file);  // the kept descriptor's file has no link left
    fs::permissions(fs::path(file).parent_path(), fs::perms(0555));
    {
      const Module again = runtime.load("tests", "example");
      CHECK(example_fma(again) == 7.0);
    }
    CHECK(open_descriptors() == before);  // the old one closed, the new one kept
  }
  SUBCASE("other bytes: refused as a damaged entry, as a fresh process would") {
    fs::permissions(fs::path(file).parent_path(), fs::owner_all);
    fs::copy_file(KILN_TEST_PLUGIN_EXAMPLE, file + ".new");
    fs::permissions(file + ".new", fs::perms(0555));
    fs::rename(file + ".new", file);
    fs::permissions(fs::path(file).parent_path(), fs::perms(0555));
    const std::string message = error_of<IntegrityError>([&] { runtime.load("tests", "example"); });
    CHECK(message.find(file) != std::string::npos);
    CHECK(message.find("digest") != std::string::npos);
  }
}

TEST_CASE("kept descriptors: a republished entry (another file under the name) is loaded, not the kept one") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  { const Module first = runtime.load("tests", "example"); }
  const std::string second = publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE).content_key;
  const Module module = runtime.load("tests", "example");
  CHECK(module.report().resolution.content_key == second);
  CHECK(example_fma(module) == 7.0);
}

TEST_CASE("kept descriptors: a descriptor the host closed and reused for another file is left alone") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  const std::string file = runtime.resolve("tests", "example").file;
  { const Module first = runtime.load("tests", "example"); }
  const int kept = descriptor_naming(file);
  REQUIRE(kept >= 0);
  // What a host closing "every descriptor it does not know" does, then a file of its own that
  // takes the number.
  REQUIRE(::close(kept) == 0);
  const std::string own_file = (dir / "host-file").string();
  const int own = ::open(own_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(own >= 0);
  if (own != kept) {
    REQUIRE(::dup2(own, kept) == kept);
    ::close(own);
  }
  {
    const Module again = runtime.load("tests", "example");
    CHECK(example_fma(again) == 7.0);
  }
  CHECK(::fcntl(kept, F_GETFD) >= 0);  // kiln closed nothing of the host's
  CHECK(fs::read_symlink("/proc/self/fd/" + std::to_string(kept)).string() == own_file);
  CHECK(lockable_exclusively(own_file));  // and took no lock on it
  ::close(kept);
}

TEST_CASE("kept descriptors: at most 8 stay open however many plugins were loaded and unloaded, the least "
          "recently used closed first") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  const std::size_t before = open_descriptors();
  std::vector<std::string> files;
  for (int i = 0; i < 12; ++i) {
    // Each toolkit version is another entry, with its own copy of the file.
    PublishRequest request;
    request.consumer = "tests";
    request.name = "p" + std::to_string(i);
    request.artifact_file = KILN_TEST_PLUGIN_HOST_ONLY;
    request.cuda_toolkit_version = 12000 + 10 * i;
    runtime.publish(request);
    const Module module = runtime.load("tests", request.name);
    files.push_back(module.report().resolution.file);
    CHECK(example_fma(module) == 7.0);
  }
  CHECK(open_descriptors() <= before + 8);
  for (std::size_t i = 0; i < files.size(); ++i) {
    CAPTURE(i);
    CHECK((descriptor_naming(files[i]) >= 0) == (i >= files.size() - 8));
  }
}

TEST_CASE("kept descriptors: a forked child that unloads its copy of a loaded plugin leaves the parent's in-use lock "
          "held") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  const std::string file = runtime.resolve("tests", "example").file;
  { const Module warm = runtime.load("tests", "example"); }  // kept idle: the next load reuses it
  std::optional<Module> loaded = runtime.load("tests", "example");
  REQUIRE_FALSE(lockable_exclusively(file));
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child's copy shares the parent's open file description (and its flock): unloading it,
    // loading and unloading again must not release the parent's lock.
    int status = 0;
    try {
      loaded.reset();
      { const Module again = runtime.load("tests", "example"); }
      { const Module once_more = runtime.load("tests", "example"); }
    } catch (...) {
      status = 3;
    }
    ::_exit(status);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(lockable_exclusively(file));  // still in use by this process: gc must skip it
  CHECK(example_fma(*loaded) == 7.0);
  loaded.reset();
  CHECK(lockable_exclusively(file));
}
