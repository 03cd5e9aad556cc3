// Nothing of a plugin runs before every check holds: the stamp is read from the verified bytes
// before dlopen (which would run its constructors), and the file dlopen maps is the descriptor
// that was checked (or the load is refused).
#include <doctest/doctest.h>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>

#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

bool can_unshare_mounts() {
  static const bool ok = kiln::test::run_shell("unshare -r -m true").exit_code == 0;
  return ok;
}

}  // namespace

TEST_CASE("load checks: a stamp naming another entry is refused before dlopen: the plugin's constructor never runs") {
  TempDir dir;
  const fs::path mark = dir / "constructor-ran";
  ScopedEnv marking("KILN_TEST_CONSTRUCTOR_MARK", mark.string());
  Runtime runtime(kiln::test::store_options(dir, std::nullopt));
  const PublishResult published = kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOSTILE);
  // The same (validly digested) file in another entry: its stamp names the first entry's key.
  const std::string other_key(32, 'e');
  kiln::test::forge_entry(dir / "cache", "tests", "forged", other_key, published.file);
  const std::string message = error_of<IntegrityError>([&] { runtime.load("tests", "forged"); });
  CHECK(has(message, "build stamp " + published.content_key));
  CHECK(has(message, other_key));
  CHECK_FALSE(fs::exists(mark));
}

TEST_CASE("load checks: the constructor marker works (the same plugin, rightly stamped, runs it)") {
  TempDir dir;
  const fs::path mark = dir / "constructor-ran";
  ScopedEnv marking("KILN_TEST_CONSTRUCTOR_MARK", mark.string());
  Runtime runtime(kiln::test::store_options(dir, std::nullopt));
  kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOSTILE);
  CHECK_NOTHROW(runtime.load("tests", "example"));
  CHECK(fs::exists(mark));
}

TEST_CASE("load checks: without /proc/self/fd the load is refused with the reason, not reopened by path" *
          doctest::skip(!can_unshare_mounts())) {
  TempDir dir;
  {
    Runtime runtime(kiln::test::store_options(dir, std::nullopt));
    kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  }
  // A private mount namespace whose /proc is an empty tmpfs: /proc/self/fd does not exist.
  const auto result = kiln::test::run_shell(
      "unshare -r -m sh -c 'mount -t tmpfs none /proc && exec env KILN_CACHE_DIR=" + (dir / "cache").string() +
      " KILN_STORE_PATH= " + KILN_CLI_PATH + " load tests example'");
  CHECK(result.exit_code == 1);
  CHECK(has(result.err, "/proc/self/fd is missing"));
  CHECK(has(result.err, "mount /proc"));
}

// Runs only where a precondition above is missing, to say which test was skipped and why.
TEST_CASE("load checks: skipped here" * doctest::skip(can_unshare_mounts())) {
  MESSAGE("SKIPPED \"without /proc/self/fd ...\": unshare -r -m is not permitted here, so a process without "
          "/proc cannot be staged");
}
