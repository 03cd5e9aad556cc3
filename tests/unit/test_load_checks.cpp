// Nothing of a plugin runs before every check holds: the stamp is read from the verified bytes
// before dlopen (which would run its constructors), the file dlopen maps is the descriptor
// that was checked (or the load is refused), the files that decide what loads (manifest.json,
// meta.json, identity.json) obey the artifact's owner/mode rules, store roots are resolved
// once, symlinks inside a store get a message that can fix them, and KILN_* overrides are read
// with secure_getenv.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>
#include <kiln/store.hpp>

#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

// AddressSanitizer's runtime reads /proc/self/maps as the CLI starts, so an ASan-built CLI
// cannot run in a namespace without /proc at all: the case needs an uninstrumented build.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

bool can_unshare_mounts() {
  static const bool ok = !kAddressSanitizer && kiln::test::run_shell("unshare -r -m true").exit_code == 0;
  return ok;
}

bool can_chown_away() {
  static const bool ok = [] {
    TempDir probe;
    kiln::test::write_text(probe / "f", "");
    return ::chown((probe / "f").c_str(), 65534, 65534) == 0;
  }();
  return ok;
}

fs::path manifest_of(const TempDir &dir) { return dir / "cache" / "consumers" / "tests" / "manifest.json"; }

// strace, and the right to trace a child (ptrace; a container may forbid it), for watching what a
// fresh process does with the store's files.
std::optional<std::string> no_strace() {
  if (kiln::test::run_shell("command -v strace").exit_code != 0) {
    return std::string("strace is not installed (Debian: strace; scripts/install-deps installs it)");
  }
  if (kiln::test::run_shell("strace -f -o /dev/null true").exit_code != 0) {
    return std::string("strace cannot trace a child here (ptrace not permitted)");
  }
  return std::nullopt;
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
      " KILN_STORE_PATH= " + kiln::test::kiln_cli_command() + " load tests example'");
  CHECK(result.exit_code == 1);
  CHECK(has(result.err, "/proc/self/fd is missing"));
  CHECK(has(result.err, "mount /proc"));
}

// Runs only where a precondition above is missing, to say which test was skipped and why.
TEST_CASE("load checks: skipped here" * doctest::skip(can_unshare_mounts() && can_chown_away())) {
  if (!can_unshare_mounts()) {
    MESSAGE("SKIPPED \"without /proc/self/fd ...\": " << (kAddressSanitizer ? "an ASan build's runtime needs /proc" :
            "unshare -r -m is not permitted here, so a process without /proc cannot be staged"));
  }
  if (!can_chown_away()) {
    MESSAGE("SKIPPED \"a manifest owned by another user ...\": this user cannot chown a file to uid 65534");
  }
}

TEST_CASE("load checks: manifest.json, meta.json and identity.json obey the artifact's owner and mode rules") {
  for (const std::string name : {"manifest.json", "meta.json", "identity.json"}) {
    CAPTURE(name);
    TempDir dir;
    Runtime runtime(kiln::test::store_options(dir, std::nullopt));
    const PublishResult published = kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
    const fs::path file = name == "manifest.json" ? manifest_of(dir) : fs::path(published.entry_dir) / name;
    { Module warm = runtime.load("tests", "example"); }

    // Writable by others: anyone could point the name at other code, or roll it back.
    ::chmod(file.c_str(), 0666);
    const std::string message =
        error_of<IntegrityError>([&] { Runtime(kiln::test::store_options(dir, std::nullopt)).load("tests", "example"); });
    CHECK(has(message, file.string()));
    CHECK(has(message, "chmod go-w"));
    CHECK(has(message, "roll it back"));
    if (name != "identity.json") {
      // A Runtime that loaded before sees it too: the stat its caches take anyway has changed.
      // (identity.json is not stat'ed on a warm load: meta.json stands for the immutable entry.)
      CHECK_THROWS_AS(runtime.load("tests", "example"), IntegrityError);
    }
    ::chmod(file.c_str(), 0644);
    CHECK_NOTHROW(Runtime(kiln::test::store_options(dir, std::nullopt)).load("tests", "example"));

    // A symlink (here to an identical copy): refused as a symlink, not with a chmod that cannot help.
    const fs::path copy = dir / "copy";
    fs::copy_file(file, copy);
    fs::remove(file);
    fs::create_symlink(copy, file);
    const std::string linked =
        error_of<IntegrityError>([&] { Runtime(kiln::test::store_options(dir, std::nullopt)).load("tests", "example"); });
    CHECK(has(linked, "is a symlink"));
    CHECK_FALSE(has(linked, "chmod"));
  }
}

TEST_CASE("load checks: a cold load checks manifest.json, meta.json and identity.json on the descriptor it reads, "
          "never by a path of its own" * kiln::test::skip_if(no_strace)) {
  // A check by path (stat/lstat) beside the read could pass a file that is then replaced before
  // the open: every access to the three files is their one O_NOFOLLOW open, whose descriptor
  // the rules are checked on (the CLI's load makes two cold Runtimes: a probe, then the timed one).
  TempDir dir;
  PublishResult published;
  {
    Runtime runtime(kiln::test::store_options(dir, std::nullopt));
    published = kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  }
  const fs::path trace = dir / "trace";
  // LeakSanitizer cannot run under ptrace: an ASan-built CLI is traced with leak checking off.
  const auto result = kiln::test::run_shell("env KILN_CACHE_DIR=" + (dir / "cache").string() +
                                            " KILN_STORE_PATH= KILN_DEVICE=sm_90"
                                            " ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\""
                                            " strace -f -e trace=%file -o " +
                                            trace.string() + " " + kiln::test::kiln_cli_command() + " load tests example");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string traced = kiln::test::read_text(trace);
  for (const fs::path &file : {manifest_of(dir), fs::path(published.entry_dir) / "meta.json",
                               fs::path(published.entry_dir) / "identity.json"}) {
    CAPTURE(file);
    std::istringstream lines(traced);
    int opens = 0, others = 0;
    for (std::string line; std::getline(lines, line);) {
      if (!has(line, "\"" + file.string() + "\"")) continue;
      const bool checked_open = has(line, "openat(") && has(line, "O_NOFOLLOW") && has(line, "O_NONBLOCK");
      (checked_open ? opens : others) += 1;
      if (!checked_open) MESSAGE(line);
    }
    CHECK(opens >= 1);
    CHECK(others == 0);
  }
}

TEST_CASE("load checks: a manifest owned by another user is refused" * doctest::skip(!can_chown_away())) {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir, std::nullopt));
  kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  REQUIRE(::chown(manifest_of(dir).c_str(), 65534, 65534) == 0);
  const std::string message = error_of<IntegrityError>([&] { runtime.load("tests", "example"); });
  CHECK(has(message, "owned by uid 65534"));
}

TEST_CASE("load checks: a store root reached through a symlink loads; a symlinked directory inside is named as one") {
  TempDir real, links;
  {
    Runtime runtime(kiln::test::store_options(real, std::nullopt));
    kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  }
  SUBCASE("the root itself is a symlink (the user's choice): resolved once, loads") {
    fs::create_symlink(real / "cache", links / "cache");
    Runtime runtime(kiln::test::store_options(links, std::nullopt));
    CHECK(runtime.stores().back().root == fs::canonical(real / "cache").string());
    Module module = runtime.load("tests", "example");
    CHECK(module.report().resolution.store_root == fs::canonical(real / "cache").string());
  }
  SUBCASE("a directory inside the store is a symlink: the message says so and how to fix it") {
    const fs::path consumer = real / "cache" / "consumers" / "tests";
    fs::rename(consumer, links / "tests");
    fs::create_symlink(links / "tests", consumer);
    Runtime runtime(kiln::test::store_options(real, std::nullopt));
    const std::string message = error_of<IntegrityError>([&] { runtime.load("tests", "example"); });
    CHECK(has(message, consumer.string()));
    CHECK(has(message, "is a symlink inside a store"));
    CHECK(has(message, "replace the link"));
    CHECK_FALSE(has(message, "chmod"));
  }
}

TEST_CASE("load checks: environment overrides are read with secure_getenv everywhere in the library and CLI") {
  // A setuid host must not let its caller's environment choose stores, libraries or compilers.
  const std::regex plain_getenv(R"((^|[^_a-zA-Z])getenv\s*\()");
  std::string offenders;
  for (const char *folder : {"src", "include"}) {
    for (fs::recursive_directory_iterator it(fs::path(KILN_TEST_SOURCE_DIR) / folder), end; it != end; ++it) {
      if (!fs::is_regular_file(it->path())) continue;
      std::ifstream in(it->path().string());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        if (std::regex_search(line, plain_getenv)) offenders += it->path().string() + ":" + std::to_string(number) + "\n";
      }
    }
  }
  CHECK_MESSAGE(offenders.empty(), "getenv instead of secure_getenv at:\n" << offenders);
}
