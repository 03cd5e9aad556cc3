// What committing an entry does with one already under its content key: the same bytes are
// kept, a valid entry with other bytes is kept -- or, for a forced rebuild, replaced with an
// info line saying the output is not reproducible -- and only a damaged one is called damaged.
// A batch commit (an import) judges each entry the same way.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/log.hpp>

#include "files/digest.hpp"
#include "files/files.hpp"
#include "store/layout.hpp"
#include "store/local_store.hpp"
#include "store/sweep.hpp"
#include "support/checks.hpp"
#include "support/fixtures.hpp"

using namespace kiln;
using kiln::test::contains;
using kiln::test::read_text;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;

namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";

struct Logged {
  std::vector<std::pair<LogLevel, std::string>> lines;
  LogCallback callback() {
    return [this](LogLevel level, const std::string &message) { lines.emplace_back(level, message); };
  }
  bool any(const std::string &words) const {
    for (const auto &[level, line] : lines) {
      if (contains(line, words)) return true;
    }
    return false;
  }
};

// A staging directory holding lib.so with `bytes` under `key`.
store::Staging staged(const store::LocalStore &cache, const std::string &bytes, const std::string &key = kKey) {
  store::Staging staging = cache.stage("c", LogCallback());
  staging.write("lib.so", bytes, 0755);
  staging.write_records({key, "plugin", "lib.so", files::digest_hex(bytes), bytes.size(), "now", {}, {}}, "{}\n");
  return staging;
}

// The entries moved aside under store/ whose names end with `suffix`.
std::vector<fs::path> asides(const store::LocalStore &cache, const std::string &suffix) {
  std::vector<fs::path> found;
  for (fs::directory_iterator it(cache.layout("c").entries()), end; it != end; ++it) {
    const std::string name = it->path().filename().string();
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found.push_back(it->path());
    }
  }
  return found;
}

}  // namespace

TEST_CASE("commit: a valid entry with other bytes is kept, or replaced by a forced rebuild saying so; never called damaged") {
  TempDir dir;
  const store::LocalStore cache({dir.path(), true, "test"});
  const fs::path entry = cache.layout("c").entry(kKey);
  const std::string first = "plugin bytes, first build", second = "plugin bytes, other build!";
  REQUIRE(cache.commit_entry(staged(cache, first), LogCallback()));

  SUBCASE("a new copy with the same bytes is dropped, even when replacing") {
    Logged log;
    CHECK_FALSE(cache.commit_entry(staged(cache, first), log.callback(), store::ExistingEntry::replace));
    CHECK(log.lines.empty());
    CHECK(asides(cache, "-replaced").empty());
  }
  SUBCASE("not forced: the stored output serves, the other bytes are dropped, nothing is said") {
    Logged log;
    CHECK_FALSE(cache.commit_entry(staged(cache, second), log.callback(), store::ExistingEntry::keep));
    CHECK(read_text(entry / "lib.so") == first);
    CHECK(log.lines.empty());
    CHECK(asides(cache, "-damaged").empty());
  }
  SUBCASE("forced: the new bytes take the name, the stored entry is moved aside whole, at info level") {
    Logged log;
    CHECK(cache.commit_entry(staged(cache, second), log.callback(), store::ExistingEntry::replace));
    CHECK(read_text(entry / "lib.so") == second);
    CHECK(cache.entry_intact("c", kKey, files::digest_hex(second)));
    REQUIRE(log.lines.size() == 1);
    CHECK(log.lines[0].first == LogLevel::info);
    const std::string &line = log.lines[0].second;
    CAPTURE(line);
    CHECK(contains(line, "rebuilt: output differs from the stored entry (not reproducible: lib.so: 25 -> 26 bytes, "
                         "first difference at byte 14)"));
    CHECK_FALSE(log.any("damaged"));
    CHECK(asides(cache, "-damaged").empty());
    // Moved aside, never changed: a reader that mapped the old file keeps its bytes, and the
    // old entry is there to compare with until the sweep.
    const auto replaced = asides(cache, "-replaced");
    REQUIRE(replaced.size() == 1);
    CHECK(contains(line, replaced[0].string()));
    CHECK(read_text(replaced[0] / "lib.so") == first);
    CHECK(store::sweep_leftovers(cache.layout("c")).total() == 0);  // kept a day
    CHECK(store::sweep_leftovers(cache.layout("c"), std::chrono::seconds(0), std::chrono::seconds(0)).staging_dirs == 1);
    CHECK_FALSE(fs::exists(replaced[0]));
    CHECK(read_text(entry / "lib.so") == second);
  }
  SUBCASE("a damaged entry (its file no longer has its own recorded digest) is still called damaged") {
    for (const auto existing : {store::ExistingEntry::keep, store::ExistingEntry::replace}) {
      write_text(entry / "lib.so", "torn");
      Logged log;
      CHECK(cache.commit_entry(staged(cache, second), log.callback(), existing));
      CHECK(read_text(entry / "lib.so") == second);
      REQUIRE(log.lines.size() == 1);
      CHECK(log.lines[0].first == LogLevel::warning);
      CHECK(contains(log.lines[0].second, "was damaged; moved aside"));
      CHECK_FALSE(log.any("rebuilt"));
      // Back to the first bytes for the next round.
      fs::remove_all(entry);
      REQUIRE(cache.commit_entry(staged(cache, first), LogCallback()));
    }
    CHECK(asides(cache, "-damaged").size() == 2);
    CHECK(asides(cache, "-replaced").empty());
  }
}

TEST_CASE("commit: a batch commits each entry as commit_entry would: fresh ones renamed, intact ones kept, damaged ones moved aside") {
  TempDir dir;
  const store::LocalStore cache({dir.path(), true, "test"});
  const std::string kept_key = "11111111111111111111111111111111", damaged_key = "22222222222222222222222222222222",
                    fresh_key = "33333333333333333333333333333333";
  REQUIRE(cache.commit_entry(staged(cache, "kept, first copy", kept_key), LogCallback()));
  REQUIRE(cache.commit_entry(staged(cache, "damaged, first copy", damaged_key), LogCallback()));
  write_text(cache.layout("c").entry(damaged_key) / "lib.so", "torn");

  std::vector<store::Staging> batch;
  batch.push_back(staged(cache, "fresh", fresh_key));
  batch.push_back(staged(cache, "kept, other bytes", kept_key));
  batch.push_back(staged(cache, "damaged, new copy", damaged_key));
  batch.push_back(staged(cache, "fresh, a second copy in the batch", fresh_key));  // the first one wins
  Logged log;
  std::vector<std::size_t> placed;
  const std::vector<bool> fresh =
      cache.commit_entries(std::move(batch), log.callback(), [&](std::size_t i) { placed.push_back(i); });
  CHECK(fresh == std::vector<bool>{true, false, true, false});
  CHECK(placed == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(read_text(cache.layout("c").entry(fresh_key) / "lib.so") == "fresh");
  CHECK(read_text(cache.layout("c").entry(kept_key) / "lib.so") == "kept, first copy");
  CHECK(read_text(cache.layout("c").entry(damaged_key) / "lib.so") == "damaged, new copy");
  CHECK(log.any("was damaged; moved aside"));
  CHECK(asides(cache, "-damaged").size() == 1);
  for (const auto &key : {kept_key, damaged_key, fresh_key}) {
    CHECK(cache.entry_intact("c", key));
    CHECK_FALSE(fs::exists(cache.layout("c").entry(key) / ".staging.lock"));
  }
  // No staging directory is left: each was renamed into place or removed.
  for (fs::directory_iterator it(cache.layout("c").entries()), end; it != end; ++it) {
    const std::string name = it->path().filename().string();
    CHECK_MESSAGE((name.size() == 32 || contains(name, "-damaged")), name);
  }
  CHECK(cache.commit_entries({}, LogCallback()).empty());
}
