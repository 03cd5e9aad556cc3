// The reliability suite's bad-input table (ctest `bad_inputs`, label reliability): hostile or
// damaged store files, plugin files, recipes, names and environment, each run through the CLI
// as a user or a controller's start-up script would. For every row: the CLI neither crashes nor
// hangs (it runs under a kill timer), exits with the documented code, --json prints valid JSON
// whose error kind matches, and the message names the input at fault.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/bundle.hpp>
#include <kiln/runtime.hpp>
#include <kiln/version.hpp>

#include "artifact/elf.hpp"
#include "support/bundle_world.hpp"
#include "support/fake_remotes.hpp"
#include "support/fake_stores.hpp"
#include "support/fixtures.hpp"

namespace {

namespace fs = boost::filesystem;
using kiln::test::read_text;
using kiln::test::run_shell;
using kiln::test::TempDir;
using kiln::test::write_text;
using nlohmann::json;

constexpr int kTimeoutSeconds = 10;

// One case's world: a writable cache holding tests/host-only (published), a recipe directory,
// and the command line the row runs.
struct World {
  World(const TempDir &dir_, fs::path cache_) : dir(dir_), cache(std::move(cache_)) {}
  const TempDir &dir;
  fs::path cache;
  fs::path consumer_dir, manifest, entry, meta, identity, artifact;
  fs::path recipe_dir, recipe;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::string names;  // what the message must mention (a path or a name)
  std::string absent;  // what no output may show (a password), when set
  std::shared_ptr<void> server;  // a fake remote the row's command talks to, while it runs
  std::function<void(const json &out)> expect;  // more the row's --json output must show, when set

  fs::path file(const std::string &name) const { return dir / name; }
};

struct Row {
  const char *what;
  int exit_code;
  const char *kind;
  std::function<void(World &)> prepare;
};

std::string quote(const std::string &text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A valid recipe (host-only, g++ never runs: only plan and parse are exercised), as JSON.
json valid_recipe() {
  return json{{"schema", 1},          {"consumer", "bad-inputs"}, {"name", "r"},
              {"sources", {"a.cu"}}, {"archs", {"sm_90"}},       {"artifact", "libr.so"}};
}

void write_recipe(World &w, const json &recipe) {
  write_text(w.recipe, recipe.dump(2));
  w.args = {"build", w.recipe.string(), "--plan"};
  w.names = w.recipe.string();
}

void replace_json(const fs::path &file, const std::function<void(json &)> &edit) {
  json value = json::parse(read_text(file));
  edit(value);
  ::chmod(file.c_str(), 0644);
  write_text(file, value.dump());
}

void load_args(World &w) { w.args = {"load", "tests", "host-only"}; }

// The hostile test plugin (tests/plugins/hostile.cpp) published as tests/hostile, loaded with
// KILN_TEST_HOSTILE choosing how it misbehaves.
void hostile_load(World &w, const std::string &mode) {
  kiln::RuntimeOptions options;
  options.cache_dir = w.cache.string();
  options.declared_device = "sm_90";
  kiln::Runtime(options).publish({"tests", "hostile", KILN_TEST_PLUGIN_HOSTILE, {}, 0, {}});
  w.env["KILN_TEST_HOSTILE"] = mode;
  w.args = {"load", "tests", "hostile"};
  w.names = fs::path(KILN_TEST_PLUGIN_HOSTILE).filename().string();
}

// A key pair k.key / k.pub in the row's directory; the public half's path.
std::string keypair(World &w) {
  return kiln::generate_keypair(w.file("k").string()).public_file;
}

// `kiln remote status` against a fake Redis answering every command with `reply`.
void hostile_redis(World &w, std::string reply) {
  auto redis = std::make_shared<kiln::test::FakeRedis>(
      [reply = std::move(reply)](const std::vector<std::string> &) { return reply; }, std::chrono::seconds(60));
  w.env["KILN_REMOTE"] = redis->url() + ";timeout=3";
  w.server = redis;
  w.args = {"remote", "status"};
}

// `kiln remote push` of tests/host-only, signed with a key it trusts, to a Redis where someone
// planted garbage under the entry's key: the push replaces it and says so.
void squatted_push(World &w) {
  auto redis = std::make_shared<kiln::test::StoringRedis>();
  const std::string key = "cas/tests/" + w.entry.filename().string();
  redis->set(key, "planted");
  const kiln::KeyPair pair = kiln::generate_keypair(w.file("k").string());
  w.env["KILN_REMOTE"] = redis->url() + ";timeout=3";
  w.env["KILN_REMOTE_TRUST"] = pair.public_file;
  w.env["KILN_REMOTE_SIGN"] = pair.secret_file;
  w.server = redis;
  w.args = {"remote", "push", "--consumer", "tests"};
  w.expect = [redis, key](const json &out) {
    REQUIRE(out["transfers"].size() == 1);
    CHECK(out["transfers"][0]["status"] == "replaced");
    CHECK(out["transfers"][0]["replaced"].get<std::string>().find(key) != std::string::npos);
    CHECK(redis->value(key) != "planted");
  };
}

// A KILN_CONFIG naming `remote` (with lease_wait 1 s) for the row's recipe: read-write and
// accept-unsigned, so that the pull waits on the remote's build lease.
void pull_from(World &w, const std::string &remote) {
  write_text(w.file("kiln.conf"), "remote = " + remote + ";read-write\naccept-unsigned = yes\nlease_wait = 1\n");
  ::chmod(w.file("kiln.conf").c_str(), 0644);
  w.env["KILN_CONFIG"] = w.file("kiln.conf").string();
  write_recipe(w, valid_recipe());
  w.args = {"remote", "pull", w.recipe.string()};
  w.names = "bad-inputs/r";
}

// tests/host-only exported as an unsigned bundle, taken apart into its members; the row then
// imports what it puts together from them (w.file("hostile.kbundle")).
std::vector<kiln::test::Member> exported_members(World &w) {
  kiln::RuntimeOptions options;
  options.cache_dir = w.cache.string();
  options.declared_device = "sm_90";
  kiln::ExportRequest request;
  request.consumer = "tests";
  request.output = w.file("exported.kbundle").string();
  kiln::Runtime(options).export_bundle(request);
  w.args = {"import", w.file("hostile.kbundle").string(), "--allow-unsigned", "--into", w.file("into").string()};
  w.names = w.file("hostile.kbundle").string();
  return kiln::test::read_members(w.file("exported.kbundle"));
}

std::string patched(std::string bytes, std::size_t at, const std::string &with) {
  bytes.replace(at, with.size(), with);
  return bytes;
}

const std::vector<Row> &rows() {
  static const std::vector<Row> table = {
      // ---- manifest.json
      {"manifest: not JSON", 6, "integrity", [](World &w) { write_text(w.manifest, "{not json"); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: truncated", 6, "integrity", [](World &w) { const auto t = read_text(w.manifest); write_text(w.manifest, t.substr(0, t.size() / 2)); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: empty file", 6, "integrity", [](World &w) { write_text(w.manifest, ""); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: top level is a list", 6, "integrity", [](World &w) { write_text(w.manifest, "[]"); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: schema is a string", 6, "integrity", [](World &w) { replace_json(w.manifest, [](json &m) { m["schema"] = "1"; }); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: schema 2^32+1", 6, "integrity", [](World &w) { replace_json(w.manifest, [](json &m) { m["schema"] = 4294967297ull; }); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: schema 1.9", 6, "integrity", [](World &w) { replace_json(w.manifest, [](json &m) { m["schema"] = 1.9; }); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: schema 1e400", 6, "integrity", [](World &w) { write_text(w.manifest, R"({"schema":1e400,"consumer":"tests","artifacts":{}})"); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: names another consumer", 6, "integrity", [](World &w) { replace_json(w.manifest, [](json &m) { m["consumer"] = "other"; }); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: artifacts is a list", 6, "integrity", [](World &w) { replace_json(w.manifest, [](json &m) { m["artifacts"] = json::array(); }); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: content key not hex", 6, "integrity", [](World &w) { replace_json(w.manifest, [](json &m) { m["artifacts"]["host-only"]["content_key"] = "../../../../etc"; }); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: content key is a number", 6, "integrity", [](World &w) { replace_json(w.manifest, [](json &m) { m["artifacts"]["host-only"]["content_key"] = 7; }); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: 100k-deep nesting", 6, "integrity", [](World &w) { write_text(w.manifest, R"({"schema":1,"consumer":"tests","artifacts":{},"x":)" + nested(100000) + "}"); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: hostile artifact name", 6, "integrity", [](World &w) { replace_json(w.manifest, [](json &m) { m["artifacts"]["../x"] = m["artifacts"]["host-only"]; }); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: non-UTF-8 artifact name", 6, "integrity", [](World &w) { auto t = read_text(w.manifest); t.replace(t.find("host-only"), 9, "host-\xe9nly"); write_text(w.manifest, t); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: a FIFO", 6, "integrity", [](World &w) { fs::remove(w.manifest); ::mkfifo(w.manifest.c_str(), 0644); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: a directory", 6, "integrity", [](World &w) { fs::remove(w.manifest); fs::create_directory(w.manifest); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: a symlink", 6, "integrity", [](World &w) { const auto copy = w.file("elsewhere.json"); fs::copy_file(w.manifest, copy); fs::remove(w.manifest); fs::create_symlink(copy, w.manifest); load_args(w); w.names = w.manifest.string(); }},
      {"manifest: writable by others", 6, "integrity", [](World &w) { ::chmod(w.manifest.c_str(), 0666); load_args(w); w.names = w.manifest.string(); }},
      // ---- meta.json
      {"meta: not JSON", 6, "integrity", [](World &w) { write_text(w.meta, "{"); load_args(w); w.names = w.meta.string(); }},
      {"meta: missing", 6, "integrity", [](World &w) { fs::remove(w.meta); load_args(w); w.names = w.entry.string(); }},
      {"meta: size 1e30", 6, "integrity", [](World &w) { replace_json(w.meta, [](json &m) { m["size"] = 1e30; }); load_args(w); w.names = w.meta.string(); }},
      {"meta: size -1", 6, "integrity", [](World &w) { replace_json(w.meta, [](json &m) { m["size"] = -1; }); load_args(w); w.names = w.meta.string(); }},
      {"meta: schema 2^32+1", 6, "integrity", [](World &w) { replace_json(w.meta, [](json &m) { m["schema"] = 4294967297ull; }); load_args(w); w.names = w.entry.string(); }},
      {"meta: edited digest", 6, "integrity", [](World &w) { replace_json(w.meta, [](json &m) { m["digest"] = std::string(32, 'a'); }); load_args(w); w.names = w.artifact.string(); }},
      {"meta: file name with traversal", 6, "integrity", [](World &w) { replace_json(w.meta, [](json &m) { m["file"] = "../../x.so"; }); load_args(w); w.names = w.meta.string(); }},
      {"meta: 100k-deep nesting", 6, "integrity", [](World &w) { write_text(w.meta, "{\"x\":" + nested(100000) + "}"); load_args(w); w.names = w.meta.string(); }},
      {"meta: a FIFO", 6, "integrity", [](World &w) { fs::remove(w.meta); ::mkfifo(w.meta.c_str(), 0644); load_args(w); w.names = w.meta.string(); }},
      {"meta: writable by others", 6, "integrity", [](World &w) { ::chmod(w.meta.c_str(), 0666); load_args(w); w.names = w.meta.string(); }},
      {"meta: names another content key", 6, "integrity", [](World &w) { replace_json(w.meta, [](json &m) { m["content_key"] = std::string(32, 'b'); }); load_args(w); w.names = w.entry.string(); }},
      // ---- identity.json
      {"identity: not JSON", 6, "integrity", [](World &w) { write_text(w.identity, "nope"); load_args(w); w.names = w.identity.string(); }},
      {"identity: missing", 6, "integrity", [](World &w) { fs::remove(w.identity); load_args(w); w.names = w.entry.string(); }},
      {"identity: 100k-deep nesting", 6, "integrity", [](World &w) { replace_json(w.identity, [](json &) {}); auto t = read_text(w.identity); t.insert(1, "\"deep\":" + nested(100000) + ","); write_text(w.identity, t); load_args(w); w.names = w.identity.string(); }},
      {"identity: archs is a number", 6, "integrity", [](World &w) { replace_json(w.identity, [](json &m) { m["archs"] = 90; }); load_args(w); w.names = w.identity.string(); }},
      {"identity: abi_version 2^40", 6, "integrity", [](World &w) { replace_json(w.identity, [](json &m) { m["abi_version"] = 1ull << 40; }); load_args(w); w.names = w.identity.string(); }},
      {"identity: writable by others", 6, "integrity", [](World &w) { ::chmod(w.identity.c_str(), 0666); load_args(w); w.names = w.identity.string(); }},
      {"identity: a FIFO", 6, "integrity", [](World &w) { fs::remove(w.identity); ::mkfifo(w.identity.c_str(), 0644); load_args(w); w.names = w.identity.string(); }},
      // ---- the artifact file and the store's directories
      {"artifact: truncated", 6, "integrity", [](World &w) { const auto t = read_text(w.artifact); ::chmod(w.artifact.c_str(), 0755); write_text(w.artifact, t.substr(0, t.size() / 3)); load_args(w); w.names = w.artifact.string(); }},
      {"artifact: replaced by text", 6, "integrity", [](World &w) { ::chmod(w.artifact.c_str(), 0755); write_text(w.artifact, "#!/bin/sh\necho hi\n"); load_args(w); w.names = w.artifact.string(); }},
      {"artifact: a symlink", 6, "integrity", [](World &w) { const auto copy = w.file("copy.so"); fs::copy_file(w.artifact, copy); fs::remove(w.artifact); fs::create_symlink(copy, w.artifact); load_args(w); w.names = w.artifact.string(); }},
      {"artifact: writable by others", 6, "integrity", [](World &w) { ::chmod(w.artifact.c_str(), 0777); load_args(w); w.names = w.artifact.string(); }},
      {"entry: a symlinked directory", 6, "integrity", [](World &w) { const auto moved = w.file("entry-elsewhere"); fs::rename(w.entry, moved); fs::create_directory_symlink(moved, w.entry); load_args(w); w.names = w.entry.string(); }},
      {"store: consumer directory writable by others", 6, "integrity", [](World &w) { ::chmod(w.consumer_dir.c_str(), 0777); load_args(w); w.names = w.consumer_dir.string(); }},
      {"store: consumers/ is a symlink", 6, "integrity", [](World &w) { const auto moved = w.file("consumers-elsewhere"); fs::rename(w.cache / "consumers", moved); fs::create_directory_symlink(moved, w.cache / "consumers"); load_args(w); w.names = (w.cache / "consumers").string(); }},
      // ---- publish
      {"publish: truncated .so", 6, "integrity", [](World &w) { const auto t = read_text(KILN_TEST_PLUGIN_HOST_ONLY); write_text(w.file("cut.so"), t.substr(0, t.size() / 2)); w.args = {"publish", "--consumer", "tests", "--name", "cut", "--artifact", w.file("cut.so").string(), "--arch", "none"}; w.names = w.file("cut.so").string(); }},
      {"publish: wrong-machine ELF", 5, "abi", [](World &w) { write_text(w.file("arm.so"), patched(read_text(KILN_TEST_PLUGIN_HOST_ONLY), 18, std::string("\xb7\x00", 2))); w.args = {"publish", "--consumer", "tests", "--name", "arm", "--artifact", w.file("arm.so").string(), "--arch", "none"}; w.names = w.file("arm.so").string(); }},
      {"publish: 32-bit ELF class", 5, "abi", [](World &w) { write_text(w.file("c32.so"), patched(read_text(KILN_TEST_PLUGIN_HOST_ONLY), 4, std::string("\x01", 1))); w.args = {"publish", "--consumer", "tests", "--name", "c32", "--artifact", w.file("c32.so").string(), "--arch", "none"}; w.names = w.file("c32.so").string(); }},
      {"publish: a text file named .so", 5, "abi", [](World &w) { write_text(w.file("text.so"), "hello\n"); w.args = {"publish", "--consumer", "tests", "--name", "text", "--artifact", w.file("text.so").string(), "--arch", "none"}; w.names = w.file("text.so").string(); }},
      {"publish: a plugin offering only ABI 2", 5, "abi", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "abi2", "--artifact", KILN_TEST_PLUGIN_ABI2, "--arch", "none"}; w.names = KILN_TEST_PLUGIN_ABI2; }},
      {"publish: a shared library that is not a plugin", 5, "abi", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "np", "--artifact", KILN_TEST_PLUGIN_NOT_A_PLUGIN, "--arch", "none"}; w.names = KILN_TEST_PLUGIN_NOT_A_PLUGIN; }},
      {"publish: --cuda-toolkit -5", 2, "usage", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "tk", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none", "--cuda-toolkit", "-5"}; w.names = "cuda"; }},
      {"publish: name ending in a dot", 2, "usage", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "hjcd-ik.", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}; w.names = "hjcd-ik."; }},
      {"publish: name starting with a dot", 2, "usage", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", ".x", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}; w.names = ".x"; }},
      {"publish: consumer with traversal", 2, "usage", [](World &w) { w.args = {"publish", "--consumer", "../x", "--name", "n", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}; w.names = "../x"; }},
      {"publish: name with a slash", 2, "usage", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "a/b", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}; w.names = "a/b"; }},
      {"publish: 65-character name", 2, "usage", [](World &w) { w.names = std::string(65, 'n'); w.args = {"publish", "--consumer", "tests", "--name", w.names, "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}; }},
      {"publish: non-ASCII name", 2, "usage", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "caf\xc3\xa9", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}; w.names = "name"; }},
      {"publish: an arch the file does not hold", 6, "integrity", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "n", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "sm_80"}; w.names = "sm_80"; }},
      {"publish: --arch none of a file with device code", 6, "integrity", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "n", "--artifact", KILN_TEST_PLUGIN_EXAMPLE, "--arch", "none"}; w.names = "host-only"; }},
      {"publish: a damaged fat binary", 6, "integrity", [](World &w) { auto t = read_text(KILN_TEST_PLUGIN_EXAMPLE); const auto at = kiln::artifact::find_elf_section(t, ".nv_fatbin"); if (at) t[at->first] = 'X'; else t = t.substr(0, t.size() / 2); write_text(w.file("fat.so"), t); w.args = {"publish", "--consumer", "tests", "--name", "fat", "--artifact", w.file("fat.so").string()}; w.names = w.file("fat.so").string(); }},
      {"publish: unknown arch", 2, "usage", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "n", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "sm_5"}; w.names = "sm_5"; }},
      {"publish: --arch none beside an arch", 2, "usage", [](World &w) { w.args = {"publish", "--consumer", "tests", "--name", "n", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none,sm_90"}; w.names = "none"; }},
      {"publish: into a cache others can write", 6, "integrity", [](World &w) { ::chmod(w.cache.c_str(), 0777); w.args = {"publish", "--consumer", "tests", "--name", "shared", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}; w.names = w.cache.string(); }},
      {"publish: into a consumer others can write", 6, "integrity", [](World &w) { ::chmod(w.consumer_dir.c_str(), 0777); w.args = {"publish", "--consumer", "tests", "--name", "shared", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}; w.names = w.consumer_dir.string(); }},
      // ---- recipes
      {"recipe: not JSON", 2, "usage", [](World &w) { write_text(w.recipe, "{"); w.args = {"build", w.recipe.string(), "--plan"}; w.names = w.recipe.string(); }},
      {"recipe: 100k-deep consumer", 2, "usage", [](World &w) { auto t = valid_recipe().dump(); t.replace(t.find("\"bad-inputs\""), 12, nested(100000)); write_text(w.recipe, t); w.args = {"build", w.recipe.string(), "--plan"}; w.names = w.recipe.string(); }},
      {"recipe: 100k-deep sources", 2, "usage", [](World &w) { auto t = valid_recipe().dump(); t.replace(t.find("[\"a.cu\"]"), 8, nested(100000)); write_text(w.recipe, t); w.args = {"build", w.recipe.string(), "--plan"}; w.names = w.recipe.string(); }},
      {"recipe: schema 1.9", 2, "usage", [](World &w) { auto r = valid_recipe(); r["schema"] = 1.9; write_recipe(w, r); }},
      {"recipe: schema 2^32+1", 2, "usage", [](World &w) { auto r = valid_recipe(); r["schema"] = 4294967297ull; write_recipe(w, r); }},
      {"recipe: empty sources", 2, "usage", [](World &w) { auto r = valid_recipe(); r["sources"] = json::array(); write_recipe(w, r); }},
      {"recipe: duplicate sources", 2, "usage", [](World &w) { auto r = valid_recipe(); r["sources"] = {"a.cu", "a.cu"}; write_recipe(w, r); }},
      {"recipe: source is a string, not a list", 2, "usage", [](World &w) { auto r = valid_recipe(); r["sources"] = "a.cu"; write_recipe(w, r); }},
      {"recipe: source escapes with ..", 2, "usage", [](World &w) { auto r = valid_recipe(); r["sources"] = {"../../../../etc/passwd"}; write_recipe(w, r); }},
      {"recipe: source is missing", 3, "not_found", [](World &w) { auto r = valid_recipe(); r["sources"] = {"gone.cu"}; write_recipe(w, r); w.names = "gone.cu"; }},
      {"recipe: source is a FIFO", 2, "usage", [](World &w) { fs::remove(w.recipe_dir / "a.cu"); ::mkfifo((w.recipe_dir / "a.cu").c_str(), 0644); write_recipe(w, valid_recipe()); w.names = "a.cu"; }},
      {"recipe: header is /dev/zero", 2, "usage", [](World &w) { fs::create_symlink("/dev/zero", w.recipe_dir / "zero.h"); auto r = valid_recipe(); r["headers"] = {"zero.h"}; write_recipe(w, r); w.names = "zero.h"; }},
      {"recipe: consumer with a slash", 2, "usage", [](World &w) { auto r = valid_recipe(); r["consumer"] = "a/b"; write_recipe(w, r); w.names = "a/b"; }},
      {"recipe: name ending in a dot", 2, "usage", [](World &w) { auto r = valid_recipe(); r["name"] = "ik."; write_recipe(w, r); w.names = "ik."; }},
      {"recipe: no archs", 2, "usage", [](World &w) { auto r = valid_recipe(); r["archs"] = json::array(); write_recipe(w, r); }},
      {"recipe: unknown arch", 2, "usage", [](World &w) { auto r = valid_recipe(); r["archs"] = {"sm_5x"}; write_recipe(w, r); w.names = "sm_5x"; }},
      {"recipe: unknown backend", 2, "usage", [](World &w) { auto r = valid_recipe(); r["backend"] = "make"; write_recipe(w, r); w.names = "make"; }},
      {"recipe: flag kiln sets itself", 2, "usage", [](World &w) { auto r = valid_recipe(); r["flags"] = {"-o"}; write_recipe(w, r); w.names = "-o"; }},
      {"recipe: link flag kiln sets itself", 2, "usage", [](World &w) { auto r = valid_recipe(); r["link_flags"] = {"--shared"}; write_recipe(w, r); w.names = "--shared"; }},
      {"recipe: artifact name with a slash", 2, "usage", [](World &w) { auto r = valid_recipe(); r["artifact"] = "../lib.so"; write_recipe(w, r); w.names = "../lib.so"; }},
      {"recipe: generator output escapes", 2, "usage", [](World &w) { auto r = valid_recipe(); r["generators"] = json::array({{{"name", "g"}, {"command", {"true"}}, {"outputs", {"../../x.h"}}}}); write_recipe(w, r); w.names = "../../x.h"; }},
      {"recipe: a generator's check refuses it", 2, "usage", [](World &w) { auto r = valid_recipe(); r["generators"] = json::array({{{"name", "g"}, {"command", {"true"}}, {"outputs", {"o.h"}}, {"tool_identity", "t"}, {"check", {"sh", "-c", "echo the chain is too long >&2; exit 1"}}}}); write_recipe(w, r); w.names = "the chain is too long"; }},
      {"recipe: a FIFO", 2, "usage", [](World &w) { ::mkfifo(w.file("fifo.json").c_str(), 0644); w.args = {"build", w.file("fifo.json").string(), "--plan"}; w.names = w.file("fifo.json").string(); }},
      // ---- plugins that misbehave at load
      {"plugin: negotiate throws an int", 5, "abi", [](World &w) { hostile_load(w, "negotiate-int"); }},
      {"plugin: negotiate throws std::runtime_error", 5, "abi", [](World &w) { hostile_load(w, "negotiate-runtime-error"); }},
      {"plugin: negotiate throws a type the host cannot name", 5, "abi", [](World &w) { hostile_load(w, "negotiate-custom"); }},
      {"plugin: negotiate returns a NULL entry table", 5, "abi", [](World &w) { hostile_load(w, "null-entry"); }},
      {"plugin: entry table smaller than ABI 1.0's", 5, "abi", [](World &w) { hostile_load(w, "entry-too-small"); }},
      {"plugin: offers no ABI the host speaks", 5, "abi", [](World &w) { hostile_load(w, "negotiate-unsupported"); }},
      // ---- bundles
      {"bundle: a plain tar, not zstd-compressed", 6, "integrity", [](World &w) { kiln::test::write_members(w.file("hostile.kbundle"), exported_members(w), false); }},
      {"bundle: a sparse member decoding to 1 GiB (decompression bomb)", 6, "integrity", [](World &w) { const auto m = exported_members(w); kiln::test::write_sparse_bomb(w.file("hostile.kbundle"), m, m.back().name, 1ull << 30); w.names = m.back().name; }},
      // ---- environment
      {"env: KILN_DEVICE garbage", 2, "usage", [](World &w) { w.env["KILN_DEVICE"] = "gpu9000"; load_args(w); w.names = "gpu9000"; }},
      {"env: KILN_CACHE_DIR relative", 2, "usage", [](World &w) { w.env["KILN_CACHE_DIR"] = "relative/cache"; load_args(w); w.names = "relative/cache"; }},
      {"env: KILN_STORE_PATH relative entry", 2, "usage", [](World &w) { w.env["KILN_STORE_PATH"] = "vendor"; load_args(w); w.names = "vendor"; }},
      {"load: hostile consumer name", 2, "usage", [](World &w) { w.args = {"load", "..", "x"}; w.names = ".."; }},
      {"load: unknown artifact", 3, "not_found", [](World &w) { w.args = {"load", "tests", "nope"}; w.names = "nope"; }},
      // ---- trust: what decides which code is accepted fails closed
      {"env: KILN_REMOTE_TRUST is ':' (no key file)", 2, "usage", [](World &w) { w.env["KILN_REMOTE"] = "http://127.0.0.1:1/kiln"; w.env["KILN_REMOTE_TRUST"] = ":"; w.args = {"remote", "status"}; w.names = "KILN_REMOTE_TRUST"; }},
      {"env: KILN_REMOTE_TRUST is ' ' (no key file)", 2, "usage", [](World &w) { w.env["KILN_REMOTE"] = "http://127.0.0.1:1/kiln"; w.env["KILN_REMOTE_TRUST"] = " "; w.args = {"remote", "status"}; w.names = "KILN_REMOTE_TRUST"; }},
      {"env: KILN_CONFIG names a missing file", 3, "not_found", [](World &w) { w.env["KILN_REMOTE"] = "http://127.0.0.1:1/kiln"; w.env["KILN_CONFIG"] = w.file("absent.conf").string(); w.args = {"remote", "status"}; w.names = w.file("absent.conf").string(); }},
      {"env: KILN_REMOTE set, the remote backends' module not installed", 2, "usage", [](World &w) { w.env["KILN_REMOTE"] = "http://127.0.0.1:1/kiln"; w.env["KILN_REMOTE_MODULE"] = w.file("absent.so").string(); w.args = {"remote", "status"}; w.names = "kiln-remote package"; }},
      {"env: KILN_REMOTE with a password and a bad attribute", 2, "usage", [](World &w) { w.env["KILN_REMOTE"] = "http://alice:S3cret@host/kiln;readonly"; w.args = {"remote", "status"}; w.names = "KILN_REMOTE"; w.absent = "S3cret"; }},
      {"env: KILN_REMOTE with a ';' inside its password", 2, "usage", [](World &w) { w.env["KILN_REMOTE"] = "http://alice:S3;cret@host/kiln"; w.args = {"remote", "status"}; w.names = "KILN_REMOTE"; w.absent = "cret"; }},
      {"import: unsigned bundle, --trust and --allow-unsigned", 6, "integrity", [](World &w) { const auto pub = keypair(w); REQUIRE(run_shell("env KILN_CACHE_DIR=" + quote(w.cache.string()) + " KILN_STORE_PATH= " + quote(KILN_CLI_PATH) + " export --consumer tests -o " + quote(w.file("b.kbundle").string())).exit_code == 0); w.args = {"import", w.file("b.kbundle").string(), "--into", w.file("into").string(), "--trust", pub, "--allow-unsigned"}; w.names = w.file("b.kbundle").string(); }},
      {"import: --trust .pub writable by others", 2, "usage", [](World &w) { const auto pub = keypair(w); ::chmod(pub.c_str(), 0666); w.args = {"import", w.file("none.kbundle").string(), "--trust", pub}; w.names = pub; }},
      {"import: --trust .pub is a symlink", 2, "usage", [](World &w) { const auto pub = keypair(w); fs::create_symlink(pub, w.file("link.pub")); w.args = {"import", w.file("none.kbundle").string(), "--trust", w.file("link.pub").string()}; w.names = w.file("link.pub").string(); }},
      {"robot init: --trajopt horizon not a number", 2, "usage", [](World &w) { w.args = {"robot", "init", w.file("r.urdf").string(), "--base", "a", "--tip", "b", "--trajopt", "32,x"}; w.names = "32,x"; }},
      {"robot init: the URDF is missing", 3, "not_found", [](World &w) { w.args = {"robot", "init", w.file("none.urdf").string(), "--base", "a", "--tip", "b"}; w.names = w.file("none.urdf").string(); }},
      // ---- remotes answering in wrong-but-legal ways: no hang, no crash, a clear state
      {"remote: Redis answers an array of 25 million elements", 1, "", [](World &w) { hostile_redis(w, "*25000000\r\n:1\r\n"); }},
      {"remote: Redis answers one reply too many", 1, "", [](World &w) { hostile_redis(w, "+PONG\r\n+PONG\r\n"); }},
      {"remote: Redis answers a 3 MB status line", 1, "", [](World &w) { hostile_redis(w, "+" + std::string(3 << 20, 'x') + "\r\n"); }},
      {"remote push: garbage planted under the entry's key is replaced", 0, "", [](World &w) { squatted_push(w); }},
      {"remote pull: Redis refuses SET NX while GET finds no holder", 3, "not_found", [](World &w) { auto redis = std::make_shared<kiln::test::FakeRedis>([](const std::vector<std::string> &) { return std::string("$-1\r\n"); }, std::chrono::seconds(60)); w.server = redis; pull_from(w, redis->url()); }},
      {"remote pull: WebDAV refuses MKCOL while GET finds no holder", 3, "not_found", [](World &w) { auto heads = std::make_shared<int>(0); auto http = std::make_shared<kiln::test::FakeHttp>([heads](const std::string &method, const std::string &) -> kiln::test::FakeHttp::Reply { if (method == "MKCOL") return {405, ""}; if (method == "HEAD") return {++*heads % 2 == 1 ? 403 : 404, ""}; return {404, ""}; }, std::chrono::seconds(60)); w.server = http; pull_from(w, http->url()); }},
  };
  return table;
}

}  // namespace

TEST_SUITE("bad_inputs") {

TEST_CASE("bad inputs: every row is refused with its exit code, a typed --json error naming the input, no crash, no hang") {
  int tried = 0;
  for (const Row &row : rows()) {
    const std::string what = row.what;
    CAPTURE(what);
    TempDir dir;
    World w{dir, dir / "cache"};
    w.env = {{"KILN_CACHE_DIR", w.cache.string()}, {"KILN_DEVICE", "sm_90"}, {"KILN_STORE_PATH", ""}};
    {
      kiln::RuntimeOptions options;
      options.cache_dir = w.cache.string();
      options.declared_device = "sm_90";
      kiln::Runtime runtime(options);
      const auto published = runtime.publish({"tests", "host-only", KILN_TEST_PLUGIN_HOST_ONLY, {}, 0, {}});
      w.entry = published.entry_dir;
      w.artifact = published.file;
    }
    w.consumer_dir = w.cache / "consumers" / "tests";
    w.manifest = w.consumer_dir / "manifest.json";
    w.meta = w.entry / "meta.json";
    w.identity = w.entry / "identity.json";
    w.recipe_dir = dir / "recipe";
    fs::create_directories(w.recipe_dir);
    write_text(w.recipe_dir / "a.cu", "extern \"C\" void f() {}\n");
    w.recipe = w.recipe_dir / "recipe.json";
    row.prepare(w);

    std::string command = "timeout -s KILL " + std::to_string(kTimeoutSeconds) + " env";
    for (const auto &[name, value] : w.env) command += " " + quote(name + "=" + value);
    command += " " + quote(KILN_CLI_PATH);
    for (const auto &arg : w.args) command += " " + quote(arg);
    command += " --json </dev/null";
    const auto result = run_shell(command);
    ++tried;
    CAPTURE(result.err);
    CHECK_MESSAGE(result.exit_code != 137, "hung: killed after " << kTimeoutSeconds << " s");
    CHECK_MESSAGE(result.exit_code < 128, "crashed with signal " << result.exit_code - 128);
    CHECK(result.exit_code == row.exit_code);
    if (!w.absent.empty()) {
      CHECK_MESSAGE(result.out.find(w.absent) == std::string::npos, "stdout shows " << w.absent << ": " << result.out);
      CHECK_MESSAGE(result.err.find(w.absent) == std::string::npos, "stderr shows " << w.absent << ": " << result.err);
    }
    const json out = json::parse(result.out, nullptr, /*allow_exceptions=*/false);
    CHECK_MESSAGE(out.is_object(), "stdout is not a JSON object: " << result.out);
    if (out.is_object() && w.expect) w.expect(out);
    if (!out.is_object() || !out.contains("error")) continue;
    CHECK(out["error"]["kind"] == row.kind);
    const std::string message = out["error"]["message"].get<std::string>();
    CHECK_MESSAGE(message.find(w.names) != std::string::npos, "the message does not name " << w.names << ": " << message);
  }
  MESSAGE(tried << " bad inputs tried through the CLI");
  CHECK(tried >= 60);
}

}  // TEST_SUITE
