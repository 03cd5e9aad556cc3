// kiln gc: least recently used first, down to --max-size or past --older-than; never an entry a
// process has loaded (its shared flock), never one a manifest names unless asked; a dry run
// changes nothing; loads record their use at most once a day per entry; a publish never names
// an entry gc evicted.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/time.h>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "store/local_store.hpp"
#include "store/maintenance/usage.hpp"
#include "support/plugin_store.hpp"

#include <kiln/gc.hpp>

using namespace kiln;
using namespace kiln::test;
using nlohmann::json;

namespace {

void set_mtime(const fs::path &file, std::time_t when) {
  struct timeval times[2] = {{when, 0}, {when, 0}};
  REQUIRE(::utimes(file.c_str(), times) == 0);
}

std::time_t mtime(const fs::path &file) {
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  return info.st_mtime;
}

// tests/example published three times with three plugins: the first two are orphans (no
// record names them), the third is named. Their last use is set: `old` 10 days ago, `recent`
// an hour ago, `named` 20 days ago.
struct GcStore {
  TempDir dir;
  Runtime runtime{store_options(dir)};
  std::string old, recent, named;
  std::time_t now = std::time(nullptr);

  GcStore() {
    old = publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE).content_key;
    recent = publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY).content_key;
    named = publish_plugin(runtime, KILN_TEST_PLUGIN_HOSTILE).content_key;
    set_mtime(entry(old) / "meta.json", now - 10 * 86400);
    set_mtime(entry(recent) / "meta.json", now - 30 * 86400);
    const store::ConsumerLayout layout((dir / "cache").string(), "tests");
    store::record_use(layout, recent);  // used later than created
    set_mtime(store::use_marker(layout, recent), now - 3600);
    set_mtime(entry(named) / "meta.json", now - 20 * 86400);
  }
  fs::path entry(const std::string &key) const { return dir / "cache" / "consumers" / "tests" / "store" / key; }
  std::uint64_t bytes(const std::string &key) const {
    std::uint64_t total = 0;
    for (fs::directory_iterator it(entry(key)), end; it != end; ++it) total += fs::file_size(it->path());
    return total;
  }
  std::map<std::string, std::string> env() const {
    return {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_STORE_PATH", ""}, {"KILN_DEVICE", "sm_90"}};
  }
};

const GcItem *item_for(const GcReport &report, const std::string &key) {
  for (const auto &item : report.items) {
    if (item.content_key == key) return &item;
  }
  return nullptr;
}

}  // namespace

TEST_SUITE("gc") {

TEST_CASE("gc: --max-size evicts the least recently used unnamed entry first, only as many as needed; the named "
          "one is kept") {
  GcStore store;
  GcOptions options;
  const std::uint64_t all = store.bytes(store.old) + store.bytes(store.recent) + store.bytes(store.named);
  options.max_bytes = all - 1;  // one entry must go
  const GcReport report = store.runtime.gc(options);
  CHECK(report.bytes_before == all);
  CHECK(report.entries_seen == 3);
  CHECK(report.entries_evicted == 1);
  REQUIRE(item_for(report, store.named) != nullptr);  // the oldest: wanted gone, but named
  CHECK(item_for(report, store.named)->outcome == "kept: named");
  REQUIRE(item_for(report, store.old) != nullptr);
  CHECK(item_for(report, store.old)->outcome == "evicted");
  CHECK(item_for(report, store.recent) == nullptr);  // under the cap once old went
  CHECK_FALSE(fs::exists(store.entry(store.old)));
  CHECK(fs::exists(store.entry(store.recent)));
  CHECK(report.bytes_after == store.bytes(store.recent) + store.bytes(store.named));
  CHECK_NOTHROW(store.runtime.load("tests", "example"));
  // Nothing left in store/ but the two entries: the evicted one was removed whole.
  std::size_t in_store = 0;
  for (fs::directory_iterator it(store.entry(store.old).parent_path()), end; it != end; ++it) ++in_store;
  CHECK(in_store == 2);
}

TEST_CASE("gc: an entry loaded in this process is kept (in use) and evicted once unloaded; its load recorded a "
          "use, so --older-than spares it") {
  GcStore store;
  GcOptions everything;
  everything.max_bytes = 0;
  {
    Module loaded = store.runtime.load_entry("tests", "example", store.old);
    const GcReport report = store.runtime.gc(everything);
    REQUIRE(item_for(report, store.old) != nullptr);
    CHECK(item_for(report, store.old)->outcome == "kept: in use");
    REQUIRE(item_for(report, store.recent) != nullptr);
    CHECK(item_for(report, store.recent)->outcome == "evicted");
    CHECK(fs::exists(store.entry(store.old)));
    CHECK(loaded.report().resolution.content_key == store.old);
  }
  GcOptions old_only;
  old_only.older_than = std::chrono::hours(24 * 5);
  CHECK(item_for(store.runtime.gc(old_only), store.old) == nullptr);  // used just now
  const GcReport last = store.runtime.gc(everything);
  REQUIRE(item_for(last, store.old) != nullptr);
  CHECK(item_for(last, store.old)->outcome == "evicted");
  CHECK_FALSE(fs::exists(store.entry(store.old)));
}

TEST_CASE("gc: --dry-run says what would go and changes nothing; --include-named evicts a named entry and drops "
          "its record") {
  GcStore store;
  auto result = run_kiln({"gc", "--older-than", "1d", "--include-named", "--dry-run", "--json"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  json out = json::parse(result.out);
  CHECK(out["entries_evicted"] == 2);  // not the one used an hour ago
  REQUIRE(out["items"].size() == 2);
  for (const auto &item : out["items"]) CHECK(item["outcome"] == "would evict");
  CHECK(fs::exists(store.entry(store.old)));
  CHECK(fs::exists(store.entry(store.named)));

  result = run_kiln({"gc", "--older-than", "15d", "--include-named", "--json"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  out = json::parse(result.out);
  CHECK(out["entries_evicted"] == 1);
  CHECK_FALSE(fs::exists(store.entry(store.named)));
  CHECK(run_kiln({"load", "tests", "example"}, store.env()).exit_code == 3);  // not found, not corrupt
  CHECK(run_kiln({"verify"}, store.env()).exit_code == 0);                    // nothing dangling
}

TEST_CASE("gc: old object-cache files go with their digests; usage errors are typed") {
  GcStore store;
  const fs::path objects = store.dir / "cache" / "consumers" / "tests" / "objects";
  fs::create_directories(objects);
  write_text(objects / "plugin-0123.o", std::string(1000, 'o'));
  write_text(objects / "plugin-0123.o.digest", "d");
  write_text(objects / "helper-4567.o", std::string(1000, 'h'));
  set_mtime(objects / "plugin-0123.o", store.now - 40 * 86400);
  auto result = run_kiln({"gc", "--older-than", "35d", "--json"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json out = json::parse(result.out);
  CHECK(out["objects_seen"] == 2);
  CHECK(out["objects_evicted"] == 1);
  CHECK_FALSE(fs::exists(objects / "plugin-0123.o"));
  CHECK_FALSE(fs::exists(objects / "plugin-0123.o.digest"));
  CHECK(fs::exists(objects / "helper-4567.o"));

  CHECK(run_kiln({"gc"}, store.env()).exit_code == 2);  // no limit
  result = run_kiln({"gc", "--max-size", "12X"}, store.env());
  CHECK(result.exit_code == 2);
  CHECK(result.err.find("K, M, G or T") != std::string::npos);
  CHECK(run_kiln({"gc", "--older-than", "3w"}, store.env()).exit_code == 2);
  CHECK(parse_size("2G") == 2ull << 30);
  CHECK(parse_age("12h") == std::chrono::hours(12));
}

TEST_CASE("gc: a load records its use at most once a day per entry (no write on every load)") {
  GcStore store;
  const store::ConsumerLayout layout((store.dir / "cache").string(), "tests");
  const fs::path marker = store::use_marker(layout, store.named);
  CHECK_FALSE(fs::exists(marker));
  REQUIRE(run_kiln({"load", "tests", "example"}, store.env()).exit_code == 0);
  REQUIRE(fs::exists(marker));
  set_mtime(marker, store.now - 3600);
  REQUIRE(run_kiln({"load", "tests", "example"}, store.env()).exit_code == 0);
  CHECK(mtime(marker) == store.now - 3600);  // an hour old: not rewritten
  set_mtime(marker, store.now - 2 * 86400);
  REQUIRE(run_kiln({"load", "tests", "example"}, store.env()).exit_code == 0);
  CHECK(mtime(marker) >= store.now);  // two days old: touched
}

TEST_CASE("gc: a manifest record is never written for an entry gc evicted (the check under the manifest lock)") {
  GcStore store;
  GcOptions options;
  options.older_than = std::chrono::hours(24);
  store.runtime.gc(options);
  REQUIRE_FALSE(fs::exists(store.entry(store.old)));
  const store::LocalStore cache({(store.dir / "cache").string(), true, "test"});
  CHECK_THROWS_AS(cache.write_record("tests", "other", {store.old, "", "plugin", store::utc_now_iso8601(), "", ""}),
                  NotFoundError);
  CHECK_FALSE(cache.manifest("tests")->artifacts.count("other"));
}

TEST_CASE("gc: each item goes to on_item as its outcome is known, least recently used first; the report then keeps "
          "none; the bykey pointers of what it evicted go, others stay") {
  GcStore store;
  const store::LocalStore cache({(store.dir / "cache").string(), true, "test"});
  const std::string to_old(32, '1'), to_recent(32, '2');
  cache.write_pointer("tests", to_old, store.old);
  cache.write_pointer("tests", to_recent, store.recent);
  GcOptions options;
  options.older_than = std::chrono::hours(24);
  options.include_named = true;
  std::vector<GcItem> seen;
  options.on_item = [&](const GcItem &item) { seen.push_back(item); };
  const GcReport report = store.runtime.gc(options);
  CHECK(report.items.empty());
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].content_key == store.named);  // 20 days
  CHECK(seen[1].content_key == store.old);    // 10 days
  for (const auto &item : seen) {
    CHECK(item.outcome == "evicted");
    CHECK(item.kind == "entry");
    CHECK(item.consumer == "tests");
    CHECK(item.path == store.entry(item.content_key).string());
  }
  CHECK(seen[1].last_used == store.now - 10 * 86400);
  CHECK(report.entries_evicted == 2);
  CHECK(report.entries_seen == 3);
  CHECK_FALSE(cache.pointer("tests", to_old, {}));
  CHECK(cache.pointer("tests", to_recent, {}) == store.recent);
}

}  // TEST_SUITE
