// Typed errors at the public API: library exceptions never escape untyped,
// and an entry kiln cannot read (EACCES) is an I/O error, not "damaged": it is left in place.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/toolchain.hpp"
#include "support/fixtures.hpp"
#include "support/hostile.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

RuntimeOptions options_for(const fs::path &cache) {
  RuntimeOptions options;
  options.cache_dir = cache.string();
  options.declared_device = "sm_90";
  return options;
}

PublishRequest example_request() {
  PublishRequest request;
  request.consumer = "tests";
  request.name = "example";
  request.artifact_file = KILN_TEST_PLUGIN_EXAMPLE;
  request.archs = {Arch::parse("sm_90")};
  return request;
}

// What an exception is, for a child's report: "kiln error (kind 1): ..." or "untyped ...".
std::string classify(const std::function<void()> &call, ErrorKind *kind, std::string *message) {
  try {
    call();
    return "no error";
  } catch (const Error &error) {
    *kind = error.kind();
    *message = error.what();
    return "";
  } catch (const std::exception &error) {
    return std::string("untyped exception escaped: ") + error.what();
  } catch (...) {
    return "an exception of unknown type escaped";
  }
}

// The unreadable-entry case needs chmod 000 to bind: not root, or root able to switch a child.
std::optional<std::string> cannot_deny_access() {
  if (kiln::test::can_deny_access()) return std::nullopt;
  return "running as root without the right to switch a child to uid 65534, so chmod 000 does not bind";
}

}  // namespace

TEST_CASE("typed errors: an unreadable entry file is an IoError naming it, and the entry is not moved aside" *
          kiln::test::skip_if(cannot_deny_access)) {
  TempDir dir;
  const fs::path cache = dir / "cache";
  PublishResult published;
  {
    Runtime runtime(options_for(cache));
    published = runtime.publish(example_request());
  }
  const fs::path entry = published.entry_dir;
  const fs::path artifact = published.file;
  const fs::path entries = entry.parent_path();
  // The unprivileged user owns the store (it may move entries), yet cannot read the artifact.
  if (::geteuid() == 0) {
    REQUIRE(::chown(dir.path().c_str(), kiln::test::kUnprivilegedUid, kiln::test::kUnprivilegedUid) == 0);
    for (fs::recursive_directory_iterator it(dir.path()), end; it != end; ++it) {
      REQUIRE(::lchown(it->path().c_str(), kiln::test::kUnprivilegedUid, kiln::test::kUnprivilegedUid) == 0);
    }
  }
  REQUIRE(::chmod(artifact.c_str(), 0) == 0);

  const std::string outcome = kiln::test::run_unprivileged([&]() -> std::string {
    if (::access(artifact.c_str(), R_OK) == 0) return "precondition: the artifact is still readable";
    ErrorKind kind = ErrorKind::other;
    std::string message;
    const std::string escaped = classify([&] { Runtime(options_for(cache)).publish(example_request()); }, &kind, &message);
    if (!escaped.empty()) return escaped;
    if (kind != ErrorKind::other) return "not an I/O error (kind " + std::to_string(static_cast<int>(kind)) + "): " + message;
    if (message.find(artifact.string()) == std::string::npos) return "the message does not name the file: " + message;
    if (message.find("ermission denied") == std::string::npos) return "the message does not say why: " + message;
    return "";
  });
  CHECK_MESSAGE(outcome.empty(), outcome);
  // Nothing was moved aside or replaced: the entry is where it was, with its files.
  CHECK(fs::exists(entry / "meta.json"));
  CHECK(fs::exists(artifact));
  int aside = 0;
  for (fs::directory_iterator it(entries), end; it != end; ++it) {
    aside += it->path().filename().string().find("damaged") != std::string::npos ? 1 : 0;
  }
  CHECK(aside == 0);
}

TEST_CASE("typed errors: a damaged entry (altered bytes) is still moved aside and republished") {
  TempDir dir;
  Runtime runtime(options_for(dir / "cache"));
  const PublishResult published = runtime.publish(example_request());
  kiln::test::write_text(published.file, "altered");
  const PublishResult again = runtime.publish(example_request());
  CHECK_FALSE(again.reused);
  CHECK(runtime.resolve("tests", "example").content_key == published.content_key);
  CHECK(kiln::test::read_text(published.file) != "altered");
}

TEST_CASE("typed errors: a Boost.Filesystem failure inside a build surfaces as a typed kiln IoError" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  TempDir dir;
  const fs::path src = dir / "src";
  fs::create_directories(src / "include");
  for (fs::directory_iterator it(fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "data" / "build"), end; it != end; ++it) {
    fs::copy_file(it->path(), src / it->path().filename());
  }
  // A header directory holding a symlink loop: listing it fails inside Boost.Filesystem.
  fs::create_symlink("loop", src / "include" / "loop");
  std::string text = kiln::test::read_text(src / "recipe.json");
  text.replace(text.find("\"headers\": [\"common.h\"]"), 23, "\"headers\": [\"common.h\", \"include\"]");
  kiln::test::write_text(src / "recipe.json", text);
  kiln::test::ScopedEnv nvcc("KILN_NVCC", (src / "nvcc-wrapper.sh").string());
  builder::reset_toolchain_memo_for_tests();

  const Recipe recipe = Recipe::load((src / "recipe.json").string());
  Runtime runtime(options_for(dir / "cache"));
  ErrorKind kind = ErrorKind::usage;
  std::string message;
  const std::string escaped = classify([&] { runtime.plan(recipe); }, &kind, &message);
  REQUIRE_MESSAGE(escaped.empty(), escaped);
  CHECK(kind == ErrorKind::other);
  CHECK_MESSAGE(message.find((src / "include" / "loop").string()) != std::string::npos, message);
  CHECK_MESSAGE(message.find(recipe.consumer + "/" + recipe.name) != std::string::npos, message);
}
