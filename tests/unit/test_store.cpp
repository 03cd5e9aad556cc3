// Store primitives: names, digests, atomic files, manifest, locks, safety, staging sweep.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "files/digest.hpp"
#include "files/files.hpp"
#include "store/layout.hpp"
#include "files/locks.hpp"
#include "store/manifest.hpp"
#include "store/names.hpp"
#include "files/safety.hpp"
#include "store/sweep.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

TEST_CASE("names: short identifiers pass, traversal and hostile names are refused with the rule") {
  for (const char *good : {"hjcd-ik", "gato", "iiwa14.v2", "a", "A_b-9"}) CHECK(store::is_valid_name(good));
  const std::vector<std::string> bad = {"", "..", ".", "../etc", "a/b", "/abs", ".hidden", "-flag",
                                        std::string("nul\0byte", 8), "caf\xc3\xa9", std::string(65, 'a'), "a..b",
                                        "sp ace"};
  for (const auto &name : bad) {
    CHECK_FALSE(store::is_valid_name(name));
    try {
      store::validate_name("consumer", name);
      FAIL("accepted " << name);
    } catch (const UsageError &error) {
      const std::string message = error.what();
      CHECK(message.find("consumer") != std::string::npos);
      CHECK(message.find("letters, digits") != std::string::npos);  // says the fix
    }
  }
}

TEST_CASE("digest: XXH3-128 as 32 lower-case hex; streaming equals one shot; fields are length-prefixed") {
  const std::string bytes(3 * 1024 * 1024 + 7, 'x');
  const std::string one_shot = files::digest_hex(bytes);
  CHECK(store::is_valid_key(one_shot));
  files::Hasher streamed;
  streamed.update(bytes.substr(0, 1000)).update(bytes.substr(1000));
  CHECK(streamed.hex() == one_shot);
  CHECK(files::digest_hex(bytes + "y") != one_shot);
  files::Hasher a, b;
  a.add_field("k", "ab").add_field("k", "c");
  b.add_field("k", "a").add_field("k", "bc");
  CHECK(a.hex() != b.hex());

  TempDir dir;
  kiln::test::write_text(dir / "f", bytes);
  CHECK(files::digest_file(dir / "f") == one_shot);
  files::Hasher from_file;
  from_file.add_file(dir / "f");
  CHECK(from_file.hex() == one_shot);
  CHECK_THROWS_AS(files::digest_file(dir / "missing"), IoError);
}

namespace {

std::optional<std::string> no_xxhsum() {
  if (kiln::test::run_shell("command -v xxhsum").exit_code == 0) return std::nullopt;
  return "xxhsum (the reference tool) is not installed";
}

}  // namespace

TEST_CASE("digest: matches the xxhsum reference tool" * kiln::test::skip_if(no_xxhsum)) {
  TempDir dir;
  kiln::test::write_text(dir / "f", "kiln reference bytes\n");
  const auto reference = kiln::test::run_shell("xxhsum -H2 " + (dir / "f").string());
  REQUIRE(reference.exit_code == 0);
  CHECK(reference.out.substr(0, 32) == files::digest_file(dir / "f"));
}

TEST_CASE("files: atomic replace leaves no temp file and errors name the path") {
  TempDir dir;
  files::write_file_atomic(dir / "m.json", "one");
  files::write_file_atomic(dir / "m.json", "two");
  CHECK(files::read_file(dir / "m.json") == "two");
  int entries = 0;
  for (fs::directory_iterator it(dir.path()), end; it != end; ++it) ++entries;
  CHECK(entries == 1);
  try {
    files::write_file_atomic(dir / "no-such-dir" / "x", "y");
    FAIL("wrote into a missing directory");
  } catch (const IoError &error) {
    CHECK(std::string(error.what()).find("no-such-dir") != std::string::npos);
  }
  CHECK_THROWS_AS(files::read_file(dir / "absent"), NotFoundError);
}

TEST_CASE("files: created store directories are 0755 whatever the umask") {
  TempDir dir;
  const mode_t old = ::umask(0);
  files::create_directories(dir / "a" / "b");
  ::umask(old);
  struct stat info {};
  REQUIRE(::stat((dir / "a" / "b").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0755);
}

TEST_CASE("manifest: round trip, and damaged, truncated or foreign manifests are refused by name") {
  TempDir dir;
  const store::ConsumerLayout layout(dir.path(), "gato");
  store::update_manifest(layout, [](store::Manifest &m) {
    m.artifacts["solver"] = {std::string(32, 'a'), std::string(32, 'b'), "plugin", "2026-01-01T00:00:00Z", "", ""};
  });
  auto manifest = store::read_manifest(layout.manifest(), "gato");
  REQUIRE(manifest);
  CHECK(manifest->artifacts.at("solver").content_key == std::string(32, 'a'));
  CHECK(manifest->artifacts.at("solver").input_key == std::string(32, 'b'));
  CHECK_FALSE(store::read_manifest(dir / "nothing.json", "gato"));

  const std::string good = files::read_file(layout.manifest());
  SUBCASE("truncated") {
    kiln::test::write_text(layout.manifest(), good.substr(0, good.size() / 2));
    try {
      store::read_manifest(layout.manifest(), "gato");
      FAIL("accepted a truncated manifest");
    } catch (const IntegrityError &error) {
      const std::string message = error.what();
      CHECK(message.find(layout.manifest().string()) != std::string::npos);
      CHECK(message.find("republish") != std::string::npos);
    }
    // An unreadable manifest is never overwritten: the update fails and the bytes stay.
    const std::string damaged = files::read_file(layout.manifest());
    CHECK_THROWS_AS(store::update_manifest(layout, [](store::Manifest &) {}), IntegrityError);
    CHECK(files::read_file(layout.manifest()) == damaged);
  }
  SUBCASE("not JSON at all") {
    kiln::test::write_text(layout.manifest(), "\x7f" "ELF garbage");
    CHECK_THROWS_AS(store::read_manifest(layout.manifest(), "gato"), IntegrityError);
  }
  SUBCASE("another schema") {
    kiln::test::write_text(layout.manifest(), R"({"schema": 99, "consumer": "gato", "artifacts": {}})");
    try {
      store::read_manifest(layout.manifest(), "gato");
      FAIL("accepted schema 99");
    } catch (const IncompatibleError &error) {
      REQUIRE(error.reasons().size() == 1);
      CHECK(error.reasons()[0].field == "manifest_schema");
      CHECK(error.reasons()[0].recorded == "99");
      CHECK(error.reasons()[0].current == std::to_string(kManifestSchema));
    }
  }
  SUBCASE("a content key that is a path") {
    kiln::test::write_text(layout.manifest(),
                           R"({"schema": 1, "consumer": "gato", "artifacts": {"s": {"content_key": "../../etc", "kind": "plugin"}}})");
    CHECK_THROWS_AS(store::read_manifest(layout.manifest(), "gato"), IntegrityError);
  }
  SUBCASE("another consumer's manifest") {
    kiln::test::write_text(layout.manifest(), R"({"schema": 1, "consumer": "other", "artifacts": {}})");
    CHECK_THROWS_AS(store::read_manifest(layout.manifest(), "gato"), IntegrityError);
  }
}

TEST_CASE("manifest: concurrent updates from threads lose nothing") {
  TempDir dir;
  const store::ConsumerLayout layout(dir.path(), "c");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        store::update_manifest(layout, [&](store::Manifest &m) {
          m.artifacts["a" + std::to_string(t) + "-" + std::to_string(i)] = {std::string(32, 'c'), "", "plugin", "", "", ""};
        });
      }
    });
  }
  for (auto &thread : threads) thread.join();
  CHECK(store::read_manifest(layout.manifest(), "c")->artifacts.size() == 80);
}

TEST_CASE("locks: exclusive across processes and released when the holder is SIGKILLed") {
  TempDir dir;
  const fs::path lock_file = dir / "build.lock";
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    files::FileLock held(lock_file);
    char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  CHECK(files::FileLock::try_acquire(lock_file) == nullptr);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  auto lock = files::FileLock::try_acquire(lock_file);
  CHECK(lock != nullptr);
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_CASE("locks: threads of one process exclude each other") {
  TempDir dir;
  std::atomic<int> inside{0};
  std::atomic<int> worst{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        files::FileLock lock(dir / "l");
        const int now = ++inside;
        worst = std::max(worst.load(), now);
        std::this_thread::yield();
        --inside;
      }
    });
  }
  for (auto &thread : threads) thread.join();
  CHECK(worst == 1);
}

TEST_CASE("safety: code is refused from a store others can write, or through a symlink") {
  TempDir dir;
  const fs::path store_root = dir / "store";
  files::create_directories(store_root / "consumers" / "c");
  const fs::path file = store_root / "consumers" / "c" / "lib.so";
  kiln::test::write_text(file, "x");
  ::chmod(file.c_str(), 0755);
  CHECK_NOTHROW(files::check_safe_to_execute(file, store_root));

  ::chmod((store_root / "consumers").c_str(), 0777);
  try {
    files::check_safe_to_execute(file, store_root);
    FAIL("accepted a world-writable store directory");
  } catch (const IntegrityError &error) {
    const std::string message = error.what();
    CHECK(message.find((store_root / "consumers").string()) != std::string::npos);
    CHECK(message.find("chmod go-w") != std::string::npos);
  }
  ::chmod((store_root / "consumers").c_str(), 0755);
  ::chmod(file.c_str(), 0666);
  CHECK_THROWS_AS(files::check_safe_to_execute(file, store_root), IntegrityError);
  ::chmod(file.c_str(), 0755);

  const fs::path link = store_root / "consumers" / "c" / "link.so";
  fs::create_symlink(file, link);
  CHECK_THROWS_AS(files::check_safe_to_execute(link, store_root), IntegrityError);
}

TEST_CASE("layout: stores come from KILN_STORE_PATH then KILN_CACHE_DIR / XDG_CACHE_HOME / HOME") {
  {
    kiln::test::ScopedEnv layers("KILN_STORE_PATH", std::string("/opt/vendor/kiln::/opt/other"));
    kiln::test::ScopedEnv cache("KILN_CACHE_DIR", std::string("/var/cache/kiln"));
    const auto stores = store::stores_from_environment();
    REQUIRE(stores.size() == 3);
    CHECK(stores[0].root == "/opt/vendor/kiln");
    CHECK_FALSE(stores[0].writable);
    CHECK(stores[1].root == "/opt/other");
    CHECK(stores[2].root == "/var/cache/kiln");
    CHECK(stores[2].writable);
  }
  {
    kiln::test::ScopedEnv layers("KILN_STORE_PATH", std::nullopt);
    kiln::test::ScopedEnv cache("KILN_CACHE_DIR", std::nullopt);
    kiln::test::ScopedEnv xdg("XDG_CACHE_HOME", std::string("/x/cache"));
    CHECK(store::default_cache_dir() == "/x/cache/kiln");
  }
  {
    kiln::test::ScopedEnv cache("KILN_CACHE_DIR", std::nullopt);
    kiln::test::ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    kiln::test::ScopedEnv home("HOME", std::string("/home/robot"));
    CHECK(store::default_cache_dir() == "/home/robot/.cache/kiln");
  }
  kiln::test::ScopedEnv relative("KILN_CACHE_DIR", std::string("relative/dir"));
  CHECK_THROWS_AS(store::default_cache_dir(), UsageError);
}
