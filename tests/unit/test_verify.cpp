// kiln verify [--repair]: each kind of damage a store can hold is found (exit 6) and, where
// kiln can repair it without losing anything, repaired (exit 0 after); what a person must fix
// (permissions) is said and left; a read-only layer is reported, never written; hostile files
// (a FIFO, a symlink) neither hang nor mislead it.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/runtime.hpp>
#include <kiln/verify.hpp>

#include "artifact/identity_json.hpp"
#include "store/maintenance/audit.hpp"
#include "files/digest.hpp"
#include "store/manifest.hpp"
#include "files/locks.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"
#include "support/test_plugins.hpp"

using namespace kiln::test;
using nlohmann::json;

namespace {

// A writable cache with consumer "t": artifacts a (example plugin) and b (host-only plugin).
struct VerifyStore {
  TempDir dir;
  std::string key_a, key_b;

  VerifyStore() {
    key_a = publish("a", KILN_TEST_PLUGIN_EXAMPLE);
    key_b = publish("b", KILN_TEST_PLUGIN_HOST_ONLY);
  }
  fs::path cache() const { return dir / "cache"; }
  fs::path consumer() const { return cache() / "consumers" / "t"; }
  fs::path entry(const std::string &key) const { return consumer() / "store" / key; }
  std::map<std::string, std::string> env() const {
    return {{"KILN_CACHE_DIR", cache().string()}, {"KILN_STORE_PATH", ""}, {"KILN_DEVICE", "sm_90"}};
  }
  std::string publish(const std::string &name, const std::string &file) const {
    const auto result = run_kiln({"publish", "--consumer", "t", "--name", name, "--artifact", file, "--json"},
                                 env());
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    return json::parse(result.out)["content_key"];
  }
  // kiln verify's JSON and exit code.
  std::pair<int, json> verify(const std::vector<std::string> &extra = {}) const {
    std::vector<std::string> args = {"verify", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run_kiln(args, env());
    INFO(result.err);
    return {result.exit_code, json::parse(result.out)};
  }
};

std::vector<json> findings_of(const json &report, const std::string &kind) {
  std::vector<json> out;
  for (const auto &finding : report["findings"]) {
    if (finding["kind"] == kind) out.push_back(finding);
  }
  return out;
}

std::string plugin_file(const fs::path &entry) {
  for (fs::directory_iterator it(entry), end; it != end; ++it) {
    if (it->path().extension() == ".so") return it->path().string();
  }
  FAIL("no .so in " << entry);
  return "";
}

void flip_byte(const std::string &file, std::uint64_t at) {
  std::string bytes = read_text(file);
  REQUIRE(at < bytes.size());
  bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
  write_text(file, bytes);
}

void make_old(const fs::path &file) {  // mtime two days back
  struct timeval times[2] = {{::time(nullptr) - 2 * 86400, 0}, {::time(nullptr) - 2 * 86400, 0}};
  REQUIRE(::utimes(file.c_str(), times) == 0);
}

}  // namespace

TEST_SUITE("verify") {

TEST_CASE("verify: a clean store is clean (exit 0) and every entry's bytes are counted") {
  VerifyStore store;
  const auto [code, report] = store.verify();
  CHECK(code == 0);
  CHECK(report["clean"] == true);
  CHECK(report["entries"] == 2);
  CHECK(report["files"] == 2);
  CHECK(report["bytes"].get<std::uint64_t>() ==
        fs::file_size(plugin_file(store.entry(store.key_a))) + fs::file_size(plugin_file(store.entry(store.key_b))));
}

TEST_CASE("verify: an entry whose artifact bytes changed is damage; --repair moves it aside and drops its record, "
          "so the name reads as not found (not corrupt) and a republish works") {
  VerifyStore store;
  flip_byte(plugin_file(store.entry(store.key_a)), 4096);
  auto [code, report] = store.verify();
  CHECK(code == 6);
  auto damaged = findings_of(report, "damaged_entry");
  REQUIRE(damaged.size() == 1);
  CHECK(damaged[0]["path"] == store.entry(store.key_a).string());
  CHECK(damaged[0]["severity"] == "damage");
  CHECK(run_kiln({"load", "t", "a"}, store.env()).exit_code == 6);

  std::tie(code, report) = store.verify({"--repair"});
  CHECK(code == 0);
  damaged = findings_of(report, "damaged_entry");
  REQUIRE(damaged.size() == 1);
  CHECK(damaged[0]["repaired"] == true);
  const std::string repair = damaged[0]["repair"];
  CHECK(repair.find("moved aside to " + (store.consumer() / "store").string() + "/.staging-") == 0);
  CHECK(repair.find("manifest record a dropped") != std::string::npos);
  CHECK_FALSE(fs::exists(store.entry(store.key_a)));
  CHECK(run_kiln({"load", "t", "a"}, store.env()).exit_code == 3);
  CHECK(run_kiln({"load", "t", "b"}, store.env()).exit_code == 0);  // the other entry untouched
  CHECK(store.publish("a", KILN_TEST_PLUGIN_EXAMPLE) == store.key_a);
  CHECK(run_kiln({"load", "t", "a"}, store.env()).exit_code == 0);
}

// Entry a's artifact replaced by entry b's bytes, with a's meta.json patched to their digest and
// size: every digest agrees, only the build stamp tells that the file belongs to b.
void swap_in_other_plugin(const VerifyStore &store) {
  const std::string file = plugin_file(store.entry(store.key_a));
  const std::string bytes = read_text(plugin_file(store.entry(store.key_b)));
  ::chmod(file.c_str(), 0755);
  write_text(file, bytes);
  ::chmod(file.c_str(), 0555);
  const fs::path meta = store.entry(store.key_a) / "meta.json";
  json value = json::parse(read_text(meta));
  value["digest"] = kiln::files::digest_hex(bytes);
  value["size"] = bytes.size();
  ::chmod(meta.c_str(), 0644);
  write_text(meta, value.dump());
  ::chmod(meta.c_str(), 0444);
}

void edit_json(const fs::path &file, const std::function<void(json &)> &edit) {
  json value = json::parse(read_text(file));
  edit(value);
  ::chmod(file.c_str(), 0644);
  write_text(file, value.dump());
}

TEST_CASE("verify: whatever a load of an entry refuses as damaged, verify reports as damage too") {
  struct Damage {
    const char *what;
    const char *finding;  // the kind verify must report
    std::function<void(const VerifyStore &)> apply;
  };
  const std::vector<Damage> damages = {
      {"an altered artifact byte", "damaged_entry", [](const VerifyStore &s) { flip_byte(plugin_file(s.entry(s.key_a)), 4096); }},
      {"another entry's file, digests patched to match", "damaged_entry", swap_in_other_plugin},
      {"meta.json names another content key", "damaged_entry",
       [](const VerifyStore &s) { edit_json(s.entry(s.key_a) / "meta.json", [](json &m) { m["content_key"] = std::string(32, 'b'); }); }},
      {"identity.json missing", "damaged_entry", [](const VerifyStore &s) { fs::remove(s.entry(s.key_a) / "identity.json"); }},
      {"identity.json not JSON", "damaged_entry", [](const VerifyStore &s) { ::chmod((s.entry(s.key_a) / "identity.json").c_str(), 0644); write_text(s.entry(s.key_a) / "identity.json", "{"); }},
      {"the manifest record's kind is not its entry's", "mismatched_record",
       [](const VerifyStore &s) { edit_json(s.consumer() / "manifest.json", [](json &m) { m["artifacts"]["a"]["kind"] = "images"; }); }},
      {"the manifest names an entry that is gone", "missing_entry", [](const VerifyStore &s) { fs::remove_all(s.entry(s.key_a)); }},
  };
  for (const auto &damage : damages) {
    CAPTURE(damage.what);
    VerifyStore store;
    damage.apply(store);
    const auto load = run_kiln({"load", "t", "a", "--json"}, store.env());
    CHECK_MESSAGE(load.exit_code != 0, "the load path no longer refuses it: " << load.out);
    CHECK(run_kiln({"load", "t", "b"}, store.env()).exit_code == 0);
    const auto [code, report] = store.verify();
    CHECK(code == 6);
    CHECK_MESSAGE(!findings_of(report, damage.finding).empty(), report.dump(1));
  }
}

// A load trusts the archs identity.json records (it picks the kernel image by them) and does not
// read the fat binaries; verify does, so a record the file does not back is damage it reports.
TEST_CASE("verify: recorded archs the plugin file does not hold, or host-only for a file with device code, are damage" *
          kiln::test::skip_if(kiln::test::example_is_host_code)) {
  for (const json &claim : {json{"sm_80"}, json::array()}) {
    CAPTURE(claim.dump());
    VerifyStore store;
    edit_json(store.entry(store.key_a) / "identity.json", [&](json &identity) { identity["archs"] = claim; });
    ::chmod((store.entry(store.key_a) / "identity.json").c_str(), 0444);
    const auto [code, report] = store.verify();
    CHECK(code == 6);
    const auto damaged = findings_of(report, "damaged_entry");
    REQUIRE_MESSAGE(damaged.size() == 1, report.dump(1));
    CHECK(damaged[0]["path"] == store.entry(store.key_a).string());
    const std::string detail = damaged[0]["detail"];
    CHECK_MESSAGE(detail.find(claim.empty() ? "holds device code (SASS sm_90; PTX compute_90)"
                                            : "holds no device code for sm_80") != std::string::npos, detail);
  }
}

TEST_CASE("verify: a malformed meta.json, a FIFO in place of identity.json and a missing entry are damage, each "
          "repaired; the FIFO does not hang it") {
  VerifyStore store;
  write_text(store.entry(store.key_a) / "meta.json", "{\"schema\": 1, \"content_key\": ");
  fs::remove(store.entry(store.key_b) / "identity.json");
  REQUIRE(::mkfifo((store.entry(store.key_b) / "identity.json").c_str(), 0644) == 0);
  const std::string key_c = store.publish("c", KILN_TEST_PLUGIN_HOSTILE);
  fs::remove_all(store.entry(key_c));

  auto [code, report] = store.verify();
  CHECK(code == 6);
  CHECK(findings_of(report, "damaged_entry").size() == 2);
  const auto missing = findings_of(report, "missing_entry");
  REQUIRE(missing.size() == 1);
  CHECK(missing[0]["path"] == store.entry(key_c).string());

  std::tie(code, report) = store.verify({"--repair"});
  CHECK(code == 0);
  for (const auto &finding : report["findings"]) {
    if (finding["severity"] == "damage") CHECK_MESSAGE(finding["repaired"] == true, finding.dump());
  }
  std::tie(code, report) = store.verify();
  CHECK(code == 0);
  CHECK(findings_of(report, "damaged_entry").empty());
  CHECK(findings_of(report, "missing_entry").empty());
  CHECK(findings_of(report, "staging_leftover").size() == 2);  // the two moved aside, kept a day
}

TEST_CASE("verify: a damaged manifest is moved aside by --repair, its entries become orphans, and the next publish "
          "writes a fresh manifest") {
  VerifyStore store;
  write_text(store.consumer() / "manifest.json", "not json at all");
  auto [code, report] = store.verify();
  CHECK(code == 6);
  REQUIRE(findings_of(report, "damaged_manifest").size() == 1);
  CHECK(run_kiln({"publish", "--consumer", "t", "--name", "a", "--artifact", KILN_TEST_PLUGIN_EXAMPLE}, store.env())
            .exit_code == 6);  // writers refuse to overwrite what they cannot read

  std::tie(code, report) = store.verify({"--repair"});
  CHECK(code == 0);
  const auto manifest = findings_of(report, "damaged_manifest");
  REQUIRE(manifest.size() == 1);
  CHECK(manifest[0]["repaired"] == true);
  const std::string aside = manifest[0]["repair"].get<std::string>().substr(std::string("moved aside to ").size());
  CHECK(read_text(aside) == "not json at all");  // kept for inspection
  CHECK(findings_of(report, "orphan_entry").size() == 2);
  CHECK(store.publish("a", KILN_TEST_PLUGIN_EXAMPLE) == store.key_a);
  CHECK(run_kiln({"load", "t", "a"}, store.env()).exit_code == 0);
}

TEST_CASE("verify: permissions a person must fix are damage that --repair reports and leaves") {
  VerifyStore store;
  const fs::path meta = store.entry(store.key_a) / "meta.json";
  REQUIRE(::chmod(meta.c_str(), 0666) == 0);
  const auto [code, report] = store.verify({"--repair"});
  CHECK(code == 6);
  const auto unsafe = findings_of(report, "unsafe_permissions");
  REQUIRE(unsafe.size() >= 1);
  CHECK(unsafe[0]["repaired"] == false);
  CHECK(unsafe[0]["detail"].get<std::string>().find("chmod") != std::string::npos);
  struct stat info {};
  REQUIRE(::stat(meta.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0666);  // untouched: whoever could write it may have
}

TEST_CASE("verify: dangling and damaged bykey pointers, dead writers' staging directories and old temps are stale; "
          "--repair removes them; a live writer's staging directory is not listed") {
  VerifyStore store;
  fs::create_directories(store.consumer() / "bykey");
  const std::string input_a(32, 'a'), input_b(32, 'b'), input_c(32, 'c');
  write_text(store.consumer() / "bykey" / input_a, std::string(32, 'f') + "\n");  // no such entry
  write_text(store.consumer() / "bykey" / input_b, "garbage");
  write_text(store.consumer() / "bykey" / input_c, store.key_a + "\n");  // fine
  const fs::path dead = store.consumer() / "store" / ".staging-v2-0123456789abcdef";
  fs::create_directories(dead);
  write_text(dead / ".staging.lock", "");  // its lock exists and nobody holds it: the writer died
  const fs::path temp = store.consumer() / ".manifest.json.tmp-12345";
  write_text(temp, "{}");
  make_old(temp);
  const fs::path live = store.consumer() / "store" / ".staging-v2-fedcba9876543210";
  fs::create_directories(live);
  kiln::files::FileLock held(live / ".staging.lock");  // a writer staging right now

  auto [code, report] = store.verify();
  CHECK(code == 0);  // stale, not damage
  CHECK(findings_of(report, "dangling_pointer").size() == 2);
  const auto staging = findings_of(report, "staging_leftover");
  REQUIRE(staging.size() == 1);
  CHECK(staging[0]["path"] == dead.string());
  CHECK(findings_of(report, "temp_leftover").size() == 1);
  CHECK(findings_of(report, "orphan_entry").empty());  // a is named by the manifest and the pointer

  std::tie(code, report) = store.verify({"--repair"});
  CHECK(code == 0);
  for (const auto &finding : report["findings"]) CHECK_MESSAGE(finding["repaired"] == true, finding.dump());
  CHECK_FALSE(fs::exists(store.consumer() / "bykey" / input_a));
  CHECK_FALSE(fs::exists(store.consumer() / "bykey" / input_b));
  CHECK(fs::exists(store.consumer() / "bykey" / input_c));
  CHECK_FALSE(fs::exists(dead));
  CHECK_FALSE(fs::exists(temp));
  CHECK(fs::exists(live));
  std::tie(code, report) = store.verify();
  CHECK(report["clean"] == true);
}

TEST_CASE("verify: what writers of the ABI header copies left in <cache>/abi is stale; --repair and gc remove it") {
  VerifyStore store;
  const fs::path abi = store.cache() / "abi";
  const auto left = [&](const std::string &name) {
    fs::create_directories(abi / name / "kiln");
    write_text(abi / name / "kiln" / "plugin.h", "//\n");
    make_old(abi / name);
    return abi / name;
  };
  const fs::path staging = left(".staging-0123abcd-1"), damaged = left(".damaged-0123abcd-2");
  auto [code, report] = store.verify();
  CHECK(code == 0);  // stale, not damage
  const auto found = findings_of(report, "staging_leftover");
  REQUIRE(found.size() == 2);
  std::tie(code, report) = store.verify({"--repair"});
  for (const auto &finding : findings_of(report, "staging_leftover")) CHECK_MESSAGE(finding["repaired"] == true, finding.dump());
  CHECK_FALSE(fs::exists(staging));
  CHECK_FALSE(fs::exists(damaged));
  std::tie(code, report) = store.verify();
  CHECK(report["clean"] == true);

  // gc, which may run where verify never does, removes them too (and evicts nothing named).
  left(".staging-0123abcd-3");
  const auto gc = run_kiln({"gc", "--max-size", "1G"}, store.env());
  CHECK_MESSAGE(gc.exit_code == 0, gc.err);
  CHECK_FALSE(fs::exists(abi / ".staging-0123abcd-3"));
}

TEST_CASE("verify: an entry no record or pointer names is an orphan (info); foreign names and a symlinked entry "
          "are reported, never followed or removed") {
  VerifyStore store;
  const std::string old_a = store.key_a;
  CHECK(store.publish("a", KILN_TEST_PLUGIN_HOSTILE) != old_a);  // a now names another entry
  write_text(store.consumer() / "store" / "README", "a person's note");
  const fs::path outside = store.dir / "outside";
  fs::create_directories(outside);
  fs::create_symlink(outside, store.consumer() / "store" / std::string(32, 'e'));
  const auto [code, report] = store.verify({"--repair"});
  CHECK(code == 6);  // the symlink inside the store
  const auto orphans = findings_of(report, "orphan_entry");
  REQUIRE(orphans.size() == 1);
  CHECK(orphans[0]["path"] == store.entry(old_a).string());
  CHECK(fs::exists(store.entry(old_a)));  // gc's business, not verify's
  CHECK(findings_of(report, "foreign_file").size() == 1);
  CHECK(fs::exists(store.consumer() / "store" / "README"));
  const auto unsafe = findings_of(report, "unsafe_permissions");
  REQUIRE(unsafe.size() == 1);
  CHECK(unsafe[0]["detail"].get<std::string>().find("symbolic link") != std::string::npos);
  CHECK(fs::is_symlink(store.consumer() / "store" / std::string(32, 'e')));
}

TEST_CASE("verify: a read-only layer's damage is reported and never repaired; --store checks one directory and "
          "repairs it") {
  VerifyStore vendor;
  flip_byte(plugin_file(vendor.entry(vendor.key_b)), 100);
  TempDir robot;
  const std::map<std::string, std::string> env = {{"KILN_CACHE_DIR", (robot / "cache").string()},
                                                  {"KILN_STORE_PATH", vendor.cache().string()},
                                                  {"KILN_DEVICE", "sm_90"}};
  auto result = run_kiln({"verify", "--repair", "--json"}, env);
  CHECK(result.exit_code == 6);
  json report = json::parse(result.out);
  CHECK(report["stores"].size() == 2);
  auto damaged = findings_of(report, "damaged_entry");
  REQUIRE(damaged.size() == 1);
  CHECK(damaged[0]["repair"] == "read-only layer: not repaired");
  CHECK(fs::exists(vendor.entry(vendor.key_b)));

  result = run_kiln({"verify", "--store", vendor.cache().string(), "--repair", "--json"}, env);
  CHECK(result.exit_code == 0);
  report = json::parse(result.out);
  CHECK(report["stores"].size() == 1);
  REQUIRE(findings_of(report, "damaged_entry").size() == 1);
  CHECK_FALSE(fs::exists(vendor.entry(vendor.key_b)));

  result = run_kiln({"verify", "--store", (robot / "nowhere").string()}, env);
  CHECK(result.exit_code == 3);
  CHECK(result.err.find("is not a directory") != std::string::npos);
}

TEST_CASE("verify: each finding goes to on_finding once it is final (its repair done), once, and is counted; the "
          "report then keeps none, and the CLI's --json lists the same") {
  VerifyStore store;
  const std::string orphan = store.key_b;
  CHECK(store.publish("b", KILN_TEST_PLUGIN_HOSTILE) != orphan);  // b now names another entry
  flip_byte(plugin_file(store.entry(store.key_a)), 4096);  // damage, named by the manifest
  const auto [cli_code, cli_report] = store.verify();
  CHECK(cli_code == 6);
  CHECK(cli_report["damage"] == 1);
  CHECK(cli_report["info"] == 1);
  CHECK(cli_report["clean"] == false);
  REQUIRE(cli_report["findings"].size() == 2);

  kiln::RuntimeOptions runtime_options;
  runtime_options.cache_dir = store.cache().string();
  runtime_options.declared_device = "sm_90";
  kiln::Runtime runtime(runtime_options);
  kiln::VerifyOptions options;
  options.repair = true;
  std::vector<kiln::StoreFinding> seen;
  options.on_finding = [&](const kiln::StoreFinding &finding) { seen.push_back(finding); };
  const kiln::VerifyReport report = runtime.verify(options);
  CHECK(report.findings.empty());
  REQUIRE(seen.size() == 3);  // and the entry moved aside: a staging leftover, kept a day
  CHECK(seen.back().kind == "staging_leftover");
  CHECK(report.damage == 1);
  CHECK(report.stale == 1);
  CHECK(report.info == 1);
  CHECK(report.repaired == 1);
  CHECK(report.unrepaired_damage() == 0);
  const auto damaged = std::find_if(seen.begin(), seen.end(), [](const auto &f) { return f.kind == "damaged_entry"; });
  REQUIRE(damaged != seen.end());
  CHECK(damaged->repaired);
  // Said after the manifest's records were checked: the repair dropped the record naming it.
  CHECK(damaged->repair.find("manifest record a dropped") != std::string::npos);
  const auto orphaned = std::find_if(seen.begin(), seen.end(), [](const auto &f) { return f.kind == "orphan_entry"; });
  REQUIRE(orphaned != seen.end());
  CHECK(orphaned->path == store.entry(orphan).string());
}

TEST_CASE("verify: a record whose kind its entry does not hold is found among more made-up kinds than verify keeps "
          "names for (a hostile store)") {
  kiln::test::TempDir dir;
  const kiln::store::LocalStore store({dir / "cache", true, "test"});
  const std::string identity = kiln::artifact::identity_file_text(kiln::ArtifactIdentity{});
  std::vector<kiln::store::Staging> batch;
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) {  // 300 kinds: past the 255 a byte names
    const std::string bytes = "artifact " + std::to_string(i);
    const std::string key = kiln::files::digest_hex(bytes);
    kiln::store::Staging staging = store.stage("t", {});
    staging.write("file", bytes, 0644);
    staging.write_records({key, "kind" + std::to_string(i), "file", key, bytes.size(), kiln::store::utc_now_iso8601(),
                           {}, {}},
                          identity);
    batch.push_back(std::move(staging));
    keys.push_back(key);
  }
  store.commit_entries(std::move(batch), {});
  kiln::store::update_manifest(store.layout("t"), [&](kiln::store::Manifest &manifest) {
    for (int i = 0; i < 300; ++i) {  // each entry named as what it holds, and as something else
      const std::string held = "kind" + std::to_string(i);
      manifest.artifacts["right" + std::to_string(i)] = {keys[i], "", held, kiln::store::utc_now_iso8601(), "", ""};
      manifest.artifacts["wrong" + std::to_string(i)] = {keys[i], "", "other", kiln::store::utc_now_iso8601(), "", ""};
    }
  });
  kiln::VerifyReport report;
  kiln::store::audit_store(store, false, report, {}, {});
  CHECK(report.entries == 300);
  int mismatched = 0;
  for (const auto &finding : report.findings) {
    if (finding.kind != "mismatched_record") continue;
    ++mismatched;
    const auto at = finding.detail.find("t/wrong");
    REQUIRE(at != std::string::npos);
    const std::string i = finding.detail.substr(at + 7, finding.detail.find(' ', at) - at - 7);
    CHECK_MESSAGE(finding.detail.find("holds a \"kind" + i + "\" one") != std::string::npos, finding.detail);
  }
  CHECK(mismatched == 300);
}

}  // TEST_SUITE
