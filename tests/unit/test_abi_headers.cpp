// The ABI headers kiln compiles plugins against are inside kiln (builder/abi_headers.hpp): a
// moved or installed kiln never reads its source tree, and keys stay what they were.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <string>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "builder/abi_headers.hpp"
#include "builder/keys.hpp"
#include "files/files.hpp"
#include "support/fixtures.hpp"

namespace kiln::test {
namespace {

std::string read_all(const fs::path &file) { return files::read_file(file); }

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("the embedded ABI headers are abi/kiln's bytes, with the digest the directory has") {
  const std::string source = std::string(KILN_TEST_SOURCE_DIR) + "/abi";
  std::size_t count = 0;
  for (const auto *file = builder::embedded_abi_begin(); file != builder::embedded_abi_end(); ++file, ++count) {
    CAPTURE(file->path);
    CHECK(read_all(fs::path(source) / file->path) == std::string(file->bytes, file->size));
  }
  std::size_t on_disk = 0;
  for (fs::recursive_directory_iterator it(fs::path(source) / "kiln"), end; it != end; ++it) {
    if (fs::is_regular_file(it->status())) ++on_disk;
  }
  CHECK(count == on_disk);
  CHECK(count >= 6);
  // The same key as a build that read abi/ from the tree: existing entries stay hits.
  CHECK(builder::embedded_abi_digest() == builder::abi_headers_digest(source));
}

TEST_CASE("builds include the ABI headers from a read-only copy in the cache, rewritten when damaged") {
  ScopedEnv no_override("KILN_ABI_DIR", std::nullopt);
  TempDir cache;
  // Finding the directory (all a plan or a hit does) writes nothing.
  const builder::AbiHeaders abi = builder::abi_headers_for(cache.path());
  CHECK(abi.embedded);
  CHECK(abi.dir == (cache.path() / "abi" / builder::embedded_abi_digest()).string());
  CHECK_FALSE(fs::exists(cache.path() / "abi"));
  builder::write_embedded_abi(abi.dir);
  const fs::path dir = abi.dir;
  CHECK(fs::exists(dir / "kiln" / "plugin.h"));
  CHECK((fs::status(dir / "kiln" / "plugin.h").permissions() & fs::owner_write) == 0);
  CHECK(builder::abi_headers_digest(dir.string()) == builder::embedded_abi_digest());
  // Nothing staged is left beside it.
  std::size_t entries = 0;
  for (fs::directory_iterator it(cache.path() / "abi"), end; it != end; ++it) ++entries;
  CHECK(entries == 1);

  // A copy someone edited is moved aside and written again: builds compile the embedded bytes.
  fs::permissions(dir / "kiln" / "plugin.h", fs::add_perms | fs::owner_write);
  files::write_file_atomic(dir / "kiln" / "plugin.h", "#error edited\n");
  builder::write_embedded_abi(abi.dir);
  const auto *plugin_h = builder::embedded_abi_begin();
  while (std::string(plugin_h->path) != "kiln/plugin.h") ++plugin_h;
  CHECK(read_all(dir / "kiln" / "plugin.h") == std::string(plugin_h->bytes, plugin_h->size));

  // The next write sweeps what writers left: a dead writer's staging copy a minute old, a copy
  // moved aside a day ago; younger ones (a writer or a compile may still use them) stay.
  const fs::path abi_root = cache.path() / "abi";
  const auto left = [&](const std::string &name, std::time_t age) {
    fs::create_directories(abi_root / name / "kiln");
    kiln::test::write_text(abi_root / name / "kiln" / "plugin.h", "//\n");
    fs::last_write_time(abi_root / name, std::time(nullptr) - age);
  };
  left(".staging-old-1", 120);
  left(".staging-young-1", 5);
  left(".damaged-old-1", 2 * 24 * 3600);
  left(".damaged-young-1", 3600);
  fs::remove_all(dir);  // so that a copy is written
  builder::write_embedded_abi(abi.dir);
  CHECK_FALSE(fs::exists(abi_root / ".staging-old-1"));
  CHECK_FALSE(fs::exists(abi_root / ".damaged-old-1"));
  CHECK(fs::exists(abi_root / ".staging-young-1"));
  CHECK(fs::exists(abi_root / ".damaged-young-1"));
  CHECK(fs::exists(dir / "kiln" / "plugin.h"));
}

TEST_CASE("a write of the ABI headers that fails (a full disk) leaves no staging copy; a later build sweeps an old one") {
  ScopedEnv no_override("KILN_ABI_DIR", std::nullopt);
  TempDir cache;
  const builder::AbiHeaders abi = builder::abi_headers_for(cache.path());
  const fs::path abi_root = cache.path() / "abi";
  // In a child whose file size limit is 0 every write fails (EFBIG), as on a full disk.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const struct rlimit none {0, 0};
    ::setrlimit(RLIMIT_FSIZE, &none);
    try {
      builder::write_embedded_abi(abi.dir);
      ::_exit(2);  // it should have failed
    } catch (const kiln::IoError &) {
      ::_exit(0);
    } catch (...) {
      ::_exit(3);
    }
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  for (fs::directory_iterator it(abi_root), end; it != end; ++it) FAIL_CHECK("left behind: " << it->path());

  // A staging copy left by an earlier kiln (or a power cut) is swept by the next build even when
  // the copy itself is intact, so nothing needs to be rewritten.
  builder::write_embedded_abi(abi.dir);
  fs::create_directories(abi_root / ".staging-dead-1" / "kiln");
  kiln::test::write_text(abi_root / ".staging-dead-1" / "kiln" / "plugin.h", "//\n");
  fs::last_write_time(abi_root / ".staging-dead-1", std::time(nullptr) - 3 * 24 * 3600);
  builder::write_embedded_abi(abi.dir);
  CHECK_FALSE(fs::exists(abi_root / ".staging-dead-1"));
}

TEST_CASE("KILN_ABI_DIR points builds at a developer's ABI tree instead") {
  TempDir other;
  ScopedEnv override_dir("KILN_ABI_DIR", other.path().string());
  TempDir cache;
  const builder::AbiHeaders abi = builder::abi_headers_for(cache.path());
  CHECK(abi.dir == other.path().string());
  CHECK_FALSE(abi.embedded);
  CHECK_FALSE(fs::exists(cache.path() / "abi"));
}

}  // TEST_SUITE

}  // namespace kiln::test
