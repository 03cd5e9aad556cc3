// Hostile store files: every file of an entry and the manifest,
// damaged the ways an attacker or a crash would, read by the CLI with --json. Each is refused
// with exit code 6 and a valid JSON error naming the file and field; nothing crashes or hangs.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"
#include "support/hostile.hpp"

using kiln::test::check_json_error;
using kiln::test::kDeeplyNestedJson;
using kiln::test::read_text;
using kiln::test::run_kiln;
using kiln::test::run_kiln_bounded;
using kiln::test::TempDir;
using kiln::test::write_text;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {


// A published example plugin in a fresh cache: the files a hostile edit goes into.
class PublishedStore {
 public:
  explicit PublishedStore(const std::string &cache_name = "cache") : cache_(dir_ / cache_name) {
    const auto result = run_kiln({"publish", "--consumer", "tests", "--name", "example", "--artifact",
                                  KILN_TEST_PLUGIN_EXAMPLE, "--arch", "sm_90", "--json"},
                                 env());
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    published_ = json::parse(result.out);
  }

  std::map<std::string, std::string> env() const {
    return {{"KILN_CACHE_DIR", cache_.string()}, {"KILN_DEVICE", "sm_90"}, {"KILN_STORE_PATH", ""}};
  }
  fs::path manifest() const { return cache_ / "consumers" / "tests" / "manifest.json"; }
  fs::path entry() const { return fs::path(published_["entry"].get<std::string>()); }
  fs::path meta() const { return entry() / "meta.json"; }
  fs::path identity() const { return entry() / "identity.json"; }
  const json &published() const { return published_; }
  const TempDir &dir() const { return dir_; }

  // Rewrites one field of a JSON file with raw JSON text (which may be anything).
  static void set_raw(const fs::path &file, const std::string &field, const std::string &raw) {
    json value = json::parse(read_text(file));
    value[field] = "@@RAW@@";
    std::string text = value.dump();
    text.replace(text.find("\"@@RAW@@\""), 9, raw);
    write_text(file, text);
  }

  static void make_fifo(const fs::path &file) {
    fs::remove(file);
    REQUIRE(::mkfifo(file.c_str(), 0644) == 0);
  }

  kiln::test::CommandResult load() const { return run_kiln_bounded({"load", "tests", "example", "--json"}, env()); }

 private:
  TempDir dir_;
  fs::path cache_;
  json published_;
};

}  // namespace

TEST_CASE("hostile store: a 100k-deep value in identity.json is refused, not a stack overflow (exit 6)") {
  PublishedStore store;
  PublishedStore::set_raw(store.identity(), "provenance", "{\"x\": " + kDeeplyNestedJson + "}");
  check_json_error(store.load(), 6, "integrity", store.identity().string());
  check_json_error(store.load(), 6, "integrity", "nested deeper than 64");
}

TEST_CASE("hostile store: deep values in the manifest and meta.json are refused naming the file") {
  PublishedStore store;
  SUBCASE("manifest") {
    PublishedStore::set_raw(store.manifest(), "artifacts", "{\"example\": " + kDeeplyNestedJson + "}");
    check_json_error(store.load(), 6, "integrity", store.manifest().string());
  }
  SUBCASE("meta.json") {
    PublishedStore::set_raw(store.meta(), "kind", kDeeplyNestedJson);
    check_json_error(store.load(), 6, "integrity", store.meta().string());
  }
}

TEST_CASE("hostile store: integers are range-checked: 2^32+1 is not 1, 1.9 is not 1, sizes are not negative") {
  PublishedStore store;
  struct Row {
    const char *what;
    int file;  // 0 manifest, 1 meta.json, 2 identity.json
    const char *field;
    const char *raw;
    const char *names;  // besides the file
  };
  const Row rows[] = {
      {"manifest schema 2^32+1", 0, "schema", "4294967297", "\"schema\""},
      {"meta schema 2^32+1", 1, "schema", "4294967297", "\"schema\""},
      {"meta schema 1.9", 1, "schema", "1.9", "\"schema\""},
      {"meta schema \"1\"", 1, "schema", "\"1\"", "\"schema\""},
      {"meta size -1", 1, "size", "-1", "size"},
      {"meta size 1e30 (a float: casting it is undefined behaviour)", 1, "size", "1e30", "size"},
      {"meta size 1e400 (overflows a double)", 1, "size", "1e400", "1e400"},
      {"identity cuda_toolkit_version 1e400", 2, "cuda_toolkit_version", "1e400", "1e400"},
      {"identity abi_version 1.5", 2, "abi_version", "1.5", "abi_version"},
  };
  for (const auto &row : rows) {
    CAPTURE(row.what);
    const fs::path files[] = {store.manifest(), store.meta(), store.identity()};
    const fs::path file = files[row.file];
    const std::string original = read_text(file);
    PublishedStore::set_raw(file, row.field, row.raw);
    const auto result = store.load();
    check_json_error(result, 6, "integrity", file.string());
    check_json_error(result, 6, "integrity", row.names);
    write_text(file, original);
  }
  // The store is whole again: the refusals came from the edits alone.
  CHECK(store.load().exit_code == 0);
}

TEST_CASE("hostile store: a FIFO in place of manifest.json, meta.json, identity.json or the plugin is refused, never waited on") {
  PublishedStore store;
  SUBCASE("manifest.json") {
    PublishedStore::make_fifo(store.manifest());
    check_json_error(store.load(), 6, "integrity", store.manifest().string());
    check_json_error(run_kiln_bounded({"ls", "tests", "--json"}, store.env()), 6, "integrity", "FIFO");
    // Listing every consumer lists this one as damaged, naming the FIFO, and goes on.
    const auto listed = run_kiln_bounded({"ls", "--json"}, store.env(), 20);
    REQUIRE_MESSAGE(listed.exit_code == 0, listed.err);
    const auto items = nlohmann::json::parse(listed.out);
    REQUIRE(items.size() == 1);
    CHECK(items[0]["consumer"] == "tests");
    CHECK(items[0]["damaged"].get<std::string>().find("FIFO") != std::string::npos);
  }
  SUBCASE("meta.json") {
    PublishedStore::make_fifo(store.meta());
    check_json_error(store.load(), 6, "integrity", store.meta().string());
  }
  SUBCASE("identity.json") {
    PublishedStore::make_fifo(store.identity());
    check_json_error(store.load(), 6, "integrity", store.identity().string());
  }
  SUBCASE("the plugin file") {
    const fs::path plugin = store.published()["file"].get<std::string>();
    PublishedStore::make_fifo(plugin);
    check_json_error(store.load(), 6, "integrity", plugin.string());
  }
}

TEST_CASE("hostile store: a manifest far larger than any kiln writes is refused by its size, unread") {
  PublishedStore store;
  // 200 MB of holes: costs no disk; read whole, it would cost the host 200 MB of memory.
  fs::resize_file(store.manifest(), 200ull << 20);
  const auto result = store.load();
  check_json_error(result, 6, "integrity", store.manifest().string());
  check_json_error(result, 6, "integrity", "more than the");
}

TEST_CASE("hostile store: a manifest whose tail a crash filled with zeros is refused, not read as whole") {
  PublishedStore store;
  fs::resize_file(store.manifest(), fs::file_size(store.manifest()) + 4096);
  const auto result = store.load();
  check_json_error(result, 6, "integrity", store.manifest().string());
  check_json_error(result, 6, "integrity", "NUL byte");
}

TEST_CASE("hostile store: non-UTF-8 bytes in a damaged manifest give a valid --json error, not SIGABRT") {
  PublishedStore store;
  std::string text = read_text(store.manifest());
  text.replace(text.find("\"tests\""), 7, "\"t\xe9sts\"");  // a Latin-1 byte inside a JSON string
  write_text(store.manifest(), text);
  check_json_error(store.load(), 6, "integrity", store.manifest().string());
}

TEST_CASE("hostile store: a store in a Latin-1 directory works with --json for every verb") {
  PublishedStore store("caf\xe9");  // publishes with --json: fails today with "invalid UTF-8 byte"
  const std::string entry = store.published()["entry"].get<std::string>();
  CHECK(entry.find("caf\xef\xbf\xbd") != std::string::npos);  // the byte shown as U+FFFD
  for (const std::vector<std::string> &verb : std::vector<std::vector<std::string>>{
           {"ls", "--json"}, {"show", "tests", "example", "--json"}, {"load", "tests", "example", "--json"},
           {"doctor", "--json"}}) {
    CAPTURE(verb[0]);
    const auto result = run_kiln_bounded(verb, store.env());
    CHECK_MESSAGE(result.exit_code == 0, result.err);
    CHECK_NOTHROW(json::parse(result.out));
  }
  // Loading works without --json too, and the artifact file is where the raw bytes say.
  CHECK(run_kiln({"load", "tests", "example"}, store.env()).exit_code == 0);
  CHECK(fs::exists(store.dir() / "caf\xe9" / "consumers" / "tests" / "manifest.json"));
}

TEST_CASE("hostile names: names ending with '.' are refused (exit 2), so \"hjcd-ik.\" never shadows \"hjcd-ik\"") {
  TempDir dir;
  const std::map<std::string, std::string> env = {
      {"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_DEVICE", "sm_90"}, {"KILN_STORE_PATH", ""}};
  for (const auto &[consumer, name] : std::vector<std::pair<std::string, std::string>>{
           {"hjcd-ik.", "example"}, {"tests", "example."}, {".x", "example"}, {"tests", ".x"}}) {
    CAPTURE(consumer + "/" + name);
    const auto result = run_kiln({"publish", "--consumer", consumer, "--name", name, "--artifact",
                                  KILN_TEST_PLUGIN_EXAMPLE, "--arch", "sm_90", "--json"},
                                 env);
    check_json_error(result, 2, "usage", consumer == "tests" ? name : consumer);
  }
  CHECK_FALSE(fs::exists(dir / "cache" / "consumers" / "hjcd-ik."));
}

TEST_CASE("hostile numbers: publish --cuda-toolkit -5 is refused (exit 2) instead of publishing an unloadable entry") {
  TempDir dir;
  const std::map<std::string, std::string> env = {
      {"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_DEVICE", "sm_90"}, {"KILN_STORE_PATH", ""}};
  const auto result = run_kiln({"publish", "--consumer", "tests", "--name", "example", "--artifact",
                                KILN_TEST_PLUGIN_EXAMPLE, "--arch", "sm_90", "--cuda-toolkit", "-5", "--json"},
                               env);
  check_json_error(result, 2, "usage", "--cuda-toolkit");
  CHECK_FALSE(fs::exists(dir / "cache" / "consumers" / "tests" / "manifest.json"));
  // A real version still publishes, and loads.
  REQUIRE(run_kiln({"publish", "--consumer", "tests", "--name", "example", "--artifact", KILN_TEST_PLUGIN_EXAMPLE,
                    "--arch", "sm_90", "--cuda-toolkit", "12060"},
                   env)
              .exit_code == 0);
  CHECK(run_kiln({"load", "tests", "example"}, env).exit_code == 0);
}
