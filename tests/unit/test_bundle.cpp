// Bundles (kiln keygen / export / import): a signed round trip into a fresh vendor layer that
// then loads, idempotent re-import, and every refusal -- wrong or missing trust, unsigned,
// tampered bytes, truncation, hostile members -- typed, naming the bundle, leaving nothing.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <archive.h>
#include <archive_entry.h>

#include <functional>
#include <memory>
#include <thread>

#include <boost/filesystem/operations.hpp>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <kiln/bundle.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "bundle/hash.hpp"
#include "bundle/index.hpp"
#include "bundle/keys.hpp"
#include "bundle/reader.hpp"
#include "files/digest.hpp"
#include "store/storage.hpp"
#include "support/bundle_world.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/test_plugins.hpp"

using kiln::test::BundleWorld;
using kiln::test::check_nothing_in;
using kiln::test::file_contents;
using kiln::test::find_member;
using kiln::test::Member;
using kiln::test::plain;
using kiln::test::read_members;
using kiln::test::special;
using kiln::test::write_members;
using kiln::test::read_text;
using kiln::test::run_kiln;
using kiln::test::TempDir;
using kiln::test::write_text;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

// What a signer can do to its own bundle: the index's sizes and hashes recomputed from the
// members as they now are and the index signed again with `secret`, so every digest and the
// signature agree and only the entries' own checks can tell.
void reindex_and_sign(std::vector<Member> &members, const fs::path &secret) {
  kiln::bundle::Index index = kiln::bundle::parse_index(members[0].bytes, "test");
  for (auto &entry : index.entries) {
    for (auto &file : entry.files) {
      const Member &carried = find_member(members, entry.content_key + "/" + file.name);
      file.size = carried.bytes.size();
      file.blake2b = kiln::bundle::blake2b_hex(carried.bytes);
    }
  }
  members[0].bytes = kiln::bundle::serialize_index(index);
  kiln::bundle::SecretKey key;
  kiln::bundle::load_secret(key, secret.string());
  members[1].bytes = kiln::bundle::serialize_signature({key.key_id, key.sign(members[0].bytes)});
}

}  // namespace

TEST_SUITE("bundle") {

TEST_CASE("bundle: keygen writes a 0600 secret key and a public key, never overwrites, and a readable secret key is refused") {
  TempDir dir;
  const auto result = run_kiln({"keygen", "-o", (dir / "k").string(), "--json"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json out = json::parse(result.out);
  CHECK(out["key_id"].get<std::string>().size() == 16);
  struct stat st {};
  REQUIRE(::stat((dir / "k.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(read_text(dir / "k.pub").rfind("kiln-ed25519-public-key v1\nkey-id " + out["key_id"].get<std::string>() + "\n", 0) == 0);
  const std::string secret = read_text(dir / "k.key");

  const auto again = run_kiln({"keygen", "-o", (dir / "k").string()});
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("already exists") != std::string::npos);
  CHECK(read_text(dir / "k.key") == secret);

  // A published plugin to sign; the key made readable by others is refused before any work.
  const std::map<std::string, std::string> env{{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_STORE_PATH", ""}};
  REQUIRE(run_kiln({"publish", "--consumer", "tests", "--name", "host_only", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none"}, env).exit_code == 0);
  ::chmod((dir / "k.key").c_str(), 0640);
  const auto refused = run_kiln({"export", "--consumer", "tests", "-o", (dir / "b").string(), "--sign", (dir / "k.key").string()}, env);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("chmod 600") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "b"));
  // A public key in place of the secret one, and the secret one as --trust, are refused too.
  ::chmod((dir / "k.key").c_str(), 0600);
  CHECK(run_kiln({"export", "--consumer", "tests", "-o", (dir / "b").string(), "--sign", (dir / "k.pub").string()}, env).exit_code == 2);
  REQUIRE(run_kiln({"export", "--consumer", "tests", "-o", (dir / "b").string(), "--sign", (dir / "k.key").string()}, env).exit_code == 0);
  const auto secret_as_trust = run_kiln({"import", (dir / "b").string(), "--into", (dir / "into").string(), "--trust", (dir / "k.key").string()}, env);
  CHECK(secret_as_trust.exit_code == 2);
  CHECK(secret_as_trust.err.find("it is a SECRET key") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "into"));
}

TEST_CASE("bundle: a signed round trip into a fresh --into directory loads from it as a read-only layer") {
  BundleWorld world;
  CHECK(world.exported["signed_by"] == world.key_id);
  REQUIRE(world.exported["entries"].size() == 2);
  CHECK(world.exported["bundle_bytes"].get<std::uint64_t>() == fs::file_size(world.bundle()));
  // Export leaves no temp file beside the bundle.
  for (fs::directory_iterator it(world.dir.path()), end; it != end; ++it) {
    CHECK(it->path().filename().string().find(".tmp-") == std::string::npos);
  }

  const auto result = world.import_trusted(world.bundle());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json out = json::parse(result.out);
  CHECK(out["signature_verified"] == true);
  CHECK(out["signed_by"] == world.key_id);
  CHECK(out["store_root"] == world.target().string());
  REQUIRE(out["entries"].size() == 2);
  for (const auto &entry : out["entries"]) {
    CHECK(entry["status"] == "added");
    CHECK(entry["content_key"] == world.keys.at(entry["name"]));
  }
  // A robot image: the directory as its only read-only layer, an empty cache.
  const std::map<std::string, std::string> robot{{"KILN_CACHE_DIR", (world.dir / "robot-cache").string()},
                                                 {"KILN_STORE_PATH", world.target().string()},
                                                 {"KILN_DEVICE", "sm_90"}};
  const auto loaded = run_kiln({"load", "tests", "example", "--json"}, robot);
  REQUIRE_MESSAGE(loaded.exit_code == 0, loaded.err);
  const json resolution = json::parse(loaded.out)["resolution"];
  CHECK(resolution["content_key"] == world.keys.at("example"));
  CHECK(resolution["store"] == world.target().string());
  CHECK(run_kiln({"load", "tests", "host_only"}, robot).exit_code == 0);

  SUBCASE("--name exports only that artifact") {
    const fs::path one = world.dir / "one.kbundle";
    const auto exported = run_kiln({"export", "--consumer", "tests", "--name", "host_only", "-o", one.string(), "--json"}, world.env());
    REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
    REQUIRE(json::parse(exported.out)["entries"].size() == 1);
    CHECK(json::parse(exported.out)["signed_by"].is_null());
    CHECK(run_kiln({"export", "--consumer", "tests", "--name", "missing", "-o", one.string()}, world.env()).exit_code == 3);
  }
}

TEST_CASE("bundle: importing twice is idempotent: already present, nothing rewritten") {
  BundleWorld world;
  REQUIRE(world.import_trusted(world.bundle()).exit_code == 0);
  const auto before = file_contents(world.target());
  struct stat manifest_before {};
  const fs::path manifest = world.target() / "consumers" / "tests" / "manifest.json";
  REQUIRE(::stat(manifest.c_str(), &manifest_before) == 0);

  const auto again = world.import_trusted(world.bundle());
  REQUIRE_MESSAGE(again.exit_code == 0, again.err);
  const json second = json::parse(again.out);
  REQUIRE(second["entries"].size() == 2);
  for (const auto &entry : second["entries"]) CHECK(entry["status"] == "already present");
  CHECK(file_contents(world.target()) == before);
  struct stat manifest_after {};
  REQUIRE(::stat(manifest.c_str(), &manifest_after) == 0);
  CHECK(manifest_after.st_ino == manifest_before.st_ino);  // not even rewritten with the same bytes

  // Into the writable cache (no --into) through the C++ API: the same entries, the same answer twice.
  kiln::RuntimeOptions options;
  options.cache_dir = (world.dir / "api-cache").string();
  kiln::Runtime runtime(options);
  kiln::ImportRequest request;
  request.bundle = world.bundle().string();
  request.trusted_keys = {world.pub().string()};
  const kiln::ImportReport first = runtime.import_bundle(request);
  CHECK(first.store_root == (world.dir / "api-cache").string());
  REQUIRE(first.entries.size() == 2);
  CHECK(first.entries[0].status == "added");
  CHECK(runtime.resolve("tests", "example").content_key == world.keys.at("example"));
  CHECK(runtime.import_bundle(request).entries[0].status == "already present");
}

TEST_CASE("bundle: a replayed older bundle does not roll a name back unless --allow-downgrade, and says downgraded") {
  BundleWorld world;  // world.bundle(): example -> the example plugin, created now
  const fs::path newer = world.dir / "newer.kbundle";
  // A second's wait: "created" has one-second resolution, and an equal time is no downgrade.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto result = run_kiln({"publish", "--consumer", "tests", "--name", "example", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY,
                          "--arch", "none", "--json"}, world.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string newer_key = json::parse(result.out)["content_key"];
  REQUIRE(newer_key != world.keys.at("example"));
  result = run_kiln({"export", "--consumer", "tests", "-o", newer.string(), "--sign", world.secret().string(), "--json"}, world.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  REQUIRE(world.import_trusted(newer).exit_code == 0);
  const fs::path manifest = world.target() / "consumers" / "tests" / "manifest.json";
  CHECK(json::parse(read_text(manifest))["artifacts"]["example"]["content_key"] == newer_key);
  const auto before = file_contents(world.target());

  // The older bundle, validly signed, replayed: refused, nothing written.
  result = world.import_trusted(world.bundle());
  CHECK_MESSAGE(result.exit_code == 6, result.err);
  const std::string message = json::parse(result.out)["error"]["message"];
  CHECK_MESSAGE(message.find(world.bundle().string()) != std::string::npos, message);
  CHECK_MESSAGE(message.find("release") != std::string::npos, message);
  CHECK_MESSAGE(message.find("of tests/example") != std::string::npos, message);
  CHECK_MESSAGE(message.find("a replayed older release") != std::string::npos, message);
  CHECK_MESSAGE(message.find("--allow-downgrade") != std::string::npos, message);
  CHECK(file_contents(world.target()) == before);

  // On purpose: done, and reported as a downgrade (the name whose entry is unchanged is not one).
  result = world.import(world.bundle(), {"--trust", world.pub().string(), "--allow-downgrade"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  std::map<std::string, std::string> status;
  const json report = json::parse(result.out);
  for (const auto &entry : report["entries"]) status[entry["name"]] = entry["status"];
  CHECK(status["example"] == "downgraded");
  CHECK(status["host_only"] == "already present");
  CHECK(json::parse(read_text(manifest))["artifacts"]["example"]["content_key"] == world.keys.at("example"));

  // The newer bundle again is no downgrade.
  result = world.import_trusted(newer);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(read_text(manifest))["artifacts"]["example"]["content_key"] == newer_key);
}

TEST_CASE("bundle: four imports of one bundle into one store at once all succeed, and the store is whole") {
  BundleWorld world;
  std::vector<kiln::test::CommandResult> results(4);
  std::vector<std::thread> imports;
  for (std::size_t i = 0; i < results.size(); ++i) {
    imports.emplace_back([&world, &results, i] { results[i] = world.import_trusted(world.bundle()); });
  }
  for (auto &thread : imports) thread.join();
  std::map<std::string, int> statuses;
  for (const auto &result : results) {
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    const json report = json::parse(result.out);  // kept: a range-for over a temporary's member dangles
    for (const auto &entry : report["entries"]) statuses[entry["status"].get<std::string>()]++;
  }
  CHECK(statuses["added"] + statuses["already present"] == 8);
  CHECK(statuses["added"] >= 2);  // each entry was added by at least one of them
  const auto env = world.env(world.dir / "robot-cache");
  std::map<std::string, std::string> robot = env;
  robot["KILN_STORE_PATH"] = world.target().string();
  const auto verified = run_kiln({"verify", "--store", world.target().string(), "--json"}, robot);
  CHECK_MESSAGE(verified.exit_code == 0, verified.out);
  CHECK(json::parse(verified.out)["clean"] == true);  // no leftover staging directory, nothing dangling
  CHECK(run_kiln({"load", "tests", "example"}, robot).exit_code == 0);
}

TEST_CASE("bundle: signatures: a wrong key, no trusted key and an unsigned bundle without --allow-unsigned are refused") {
  BundleWorld world;
  SUBCASE("signed by a key that is not trusted") {
    REQUIRE(run_kiln({"keygen", "-o", (world.dir / "other").string()}).exit_code == 0);
    const auto result = world.import(world.bundle(), {"--trust", (world.dir / "other.pub").string()});
    world.check_refused(result, world.bundle(), "none of the trusted keys");
  }
  SUBCASE("no --trust key for a signed bundle") {
    world.check_refused(world.import(world.bundle()), world.bundle(), "no --trust key", 2);
  }
  SUBCASE("the index altered after signing (an entry dropped), the signature kept") {
    auto members = read_members(world.bundle());
    json index = json::parse(members[0].bytes);
    index["entries"].erase(index["entries"].begin());
    members[0].bytes = index.dump(1) + "\n";
    const fs::path altered = world.dir / "altered.kbundle";
    write_members(altered, members);
    world.check_refused(world.import_trusted(altered), altered, "does not verify");
  }
  SUBCASE("unsigned: refused without --allow-unsigned, imported with it when no key is trusted") {
    const fs::path unsigned_bundle = world.dir / "unsigned.kbundle";
    REQUIRE(run_kiln({"export", "--consumer", "tests", "-o", unsigned_bundle.string()}, world.env()).exit_code == 0);
    world.check_refused(world.import(unsigned_bundle), unsigned_bundle, "is not signed", 2);
    world.check_refused(world.import_trusted(unsigned_bundle), unsigned_bundle, "is not signed");
    const auto allowed = world.import(unsigned_bundle, {"--allow-unsigned"});
    REQUIRE_MESSAGE(allowed.exit_code == 0, allowed.err);
    CHECK(json::parse(allowed.out)["signature_verified"] == false);
    CHECK(allowed.err.find("not signed") != std::string::npos);  // said at the default verbosity
  }
  SUBCASE("the signature removed: refused like a wrong key, --allow-unsigned or not") {
    REQUIRE(run_kiln({"keygen", "-o", (world.dir / "other").string()}).exit_code == 0);
    auto members = read_members(world.bundle());
    REQUIRE(members.at(1).name == "kiln-bundle.sig");
    members.erase(members.begin() + 1);
    const fs::path stripped = world.dir / "stripped.kbundle";
    write_members(stripped, members);
    for (const auto &trusted : {world.pub(), world.dir / "other.pub"}) {
      CAPTURE(trusted);
      const auto result = world.import(stripped, {"--trust", trusted.string(), "--allow-unsigned"});
      world.check_refused(result, stripped, "is not signed, and trusted keys are given");
    }
  }
  SUBCASE("C++ API: the typed error") {
    kiln::RuntimeOptions options;
    options.cache_dir = (world.dir / "api-cache").string();
    kiln::Runtime runtime(options);
    kiln::ImportRequest request;
    request.bundle = world.bundle().string();
    request.into = world.target().string();
    REQUIRE(run_kiln({"keygen", "-o", (world.dir / "other").string()}).exit_code == 0);
    request.trusted_keys = {(world.dir / "other.pub").string()};
    CHECK_THROWS_AS(runtime.import_bundle(request), kiln::IntegrityError);
    request.trusted_keys.clear();
    CHECK_THROWS_AS(runtime.import_bundle(request), kiln::UsageError);
    request.bundle = (world.dir / "absent.kbundle").string();
    CHECK_THROWS_AS(runtime.import_bundle(request), kiln::NotFoundError);
    check_nothing_in(world.target());
  }
}

TEST_CASE("bundle: one altered byte in an artifact is refused, and a store that had entries is left as it was") {
  BundleWorld world;
  // The target already holds host_only from an earlier bundle.
  const fs::path earlier = world.dir / "earlier.kbundle";
  REQUIRE(run_kiln({"export", "--consumer", "tests", "--name", "host_only", "-o", earlier.string(), "--sign",
                    world.secret().string()}, world.env()).exit_code == 0);
  REQUIRE(world.import_trusted(earlier).exit_code == 0);
  const auto before = file_contents(world.target());

  auto members = read_members(world.bundle());
  Member &plugin = find_member(members, "/libkiln_test_example.so");
  plugin.bytes[plugin.bytes.size() / 2] ^= 0x01;
  const fs::path tampered = world.dir / "tampered.kbundle";
  write_members(tampered, members);
  const auto result = world.import_trusted(tampered);
  CHECK(result.exit_code == 6);
  const std::string message = json::parse(result.out)["error"]["message"];
  CHECK(message.find(tampered.string()) != std::string::npos);
  CHECK(message.find("libkiln_test_example.so does not have the BLAKE2b-256") != std::string::npos);
  CHECK(file_contents(world.target()) == before);
  for (fs::recursive_directory_iterator it(world.target()), end; it != end; ++it) {
    CHECK(it->path().string().find(".staging-") == std::string::npos);
  }
  CHECK_FALSE(fs::exists(world.target() / "consumers" / "tests" / "store" / world.keys.at("example")));
}

// A signer who can sign (a trusted key) swaps the plugin files of the bundle's two entries and
// patches each meta.json and the index to match: every digest and the signature agree, and only
// the build stamps tell that each file belongs to the other entry. A load would refuse both, so
// the import refuses the bundle before anything is committed.
TEST_CASE("bundle: a re-signed bundle whose entries' files were swapped is refused: the build stamps disagree") {
  BundleWorld world;
  auto members = read_members(world.bundle());
  Member &example = find_member(members, "/libkiln_test_example.so");
  Member &host_only = find_member(members, "/libkiln_test_host_only.so");
  std::swap(example.bytes, host_only.bytes);
  kiln::bundle::Index index = kiln::bundle::parse_index(members[0].bytes, "test");
  for (auto &entry : index.entries) {
    Member *plugin = nullptr;
    std::string meta_text;
    for (auto &member : members) {
      if (member.name.rfind("entries/tests/" + entry.content_key + "/", 0) != 0) continue;
      if (fs::path(member.name).extension() == ".so") plugin = &member;
    }
    REQUIRE(plugin != nullptr);
    Member &meta = find_member(members, entry.content_key + "/meta.json");
    json value = json::parse(meta.bytes);
    value["digest"] = kiln::files::digest_hex(plugin->bytes);
    value["size"] = plugin->bytes.size();
    meta.bytes = value.dump();
  }
  reindex_and_sign(members, world.secret());
  const fs::path swapped = world.dir / "swapped.kbundle";
  write_members(swapped, members);
  world.check_refused(world.import_trusted(swapped), swapped, "carries build stamp");
}

// A signer's bundle whose plugin entry records archs its file does not hold (sm_80 for a file of
// sm_90 code, or none, "host-only", for a file with device code): a GPU would pick a kernel image
// the file lacks. Import and a remote fetch (a one-entry bundle) refuse it before committing.
TEST_CASE("bundle: a re-signed bundle whose entry records archs its file does not back is refused by import and "
          "remote fetch" * kiln::test::skip_if(kiln::test::example_is_host_code)) {
  BundleWorld world;
  const fs::path single = world.dir / "example.kbundle";
  REQUIRE(run_kiln({"export", "--consumer", "tests", "--name", "example", "-o", single.string(), "--sign",
                    world.secret().string()}, world.env()).exit_code == 0);
  for (const json &claim : {json{"sm_80"}, json::array()}) {
    CAPTURE(claim.dump());
    const std::string why = claim.empty() ? "holds device code (SASS sm_90; PTX compute_90)" : "holds no device code for sm_80";
    for (const fs::path &source : {world.bundle(), single}) {
      auto members = read_members(source);
      Member &identity = find_member(members, world.keys.at("example") + "/identity.json");
      json record = json::parse(identity.bytes);
      record["archs"] = claim;
      identity.bytes = record.dump();
      reindex_and_sign(members, world.secret());
      const fs::path claimed = world.dir / ("claimed-" + source.filename().string());
      write_members(claimed, members);
      if (source == world.bundle()) {
        world.check_refused(world.import_trusted(claimed), claimed, why);
        continue;
      }
      const kiln::store::Storage fetched({kiln::store::StoreLocation{world.dir / "fetched", true, "test"}});
      std::string message;
      try {
        kiln::bundle::read_entry_bundle(fetched, {claimed.string(), "tests", world.keys.at("example"), "", {world.pub().string()}}, {});
      } catch (const kiln::IntegrityError &error) {
        message = error.what();
      }
      CHECK_MESSAGE(message.find(why) != std::string::npos, message);
      check_nothing_in(world.dir / "fetched");
    }
  }
}

TEST_CASE("bundle: a bundle cut short anywhere is refused and leaves nothing") {
  BundleWorld world;
  const std::string bytes = read_text(world.bundle());
  for (const std::size_t cut : {std::size_t(0), std::size_t(5), std::size_t(100), bytes.size() / 4, bytes.size() / 2,
                                bytes.size() - 100, bytes.size() - 1}) {
    CAPTURE(cut);
    const fs::path short_bundle = world.dir / "short.kbundle";
    write_text(short_bundle, bytes.substr(0, cut));
    world.check_refused(world.import_trusted(short_bundle), short_bundle, cut < 100 ? "is not a kiln bundle" : "cut short");
    CHECK_FALSE(fs::exists(world.target()));
  }
  // Cut at a member boundary, rewritten as a well-formed archive: missing members are named.
  auto members = read_members(world.bundle());
  members.pop_back();
  const fs::path fewer = world.dir / "fewer.kbundle";
  write_members(fewer, members);
  world.check_refused(world.import_trusted(fewer), fewer, "it was cut short");
}

TEST_CASE("bundle: hostile archives are refused with a typed error naming the bundle, leaving nothing") {
  BundleWorld world;
  const std::vector<Member> good = read_members(world.bundle());
  REQUIRE(good[0].name == "kiln-bundle.json");
  REQUIRE(good[1].name == "kiln-bundle.sig");
  const std::string listed = good.back().name;  // entries/tests/<key>/<file>
  const fs::path hostile = world.dir / "hostile.kbundle";
  // Each case keeps the signed index and signature (an attacker cannot re-sign) and changes the members.
  const auto check = [&](const std::function<void(std::vector<Member> &)> &change, const std::string &why) {
    std::vector<Member> members = good;
    change(members);
    write_members(hostile, members);
    world.check_refused(world.import_trusted(hostile), hostile, why);
    CHECK_FALSE(fs::exists(world.dir / "evil"));
    CHECK_FALSE(fs::exists(world.target() / "evil"));
    CHECK_FALSE(fs::exists(world.target()));  // created by the import, removed again with the refusal
  };
  SUBCASE("path traversal") {
    check([&](auto &m) { m.push_back(plain("entries/../../../evil", "x")); }, "not a safe relative name");
  }
  SUBCASE("absolute name") {
    check([&](auto &m) { m.push_back(plain((world.dir / "evil").string(), "x")); }, "not a safe relative name");
  }
  SUBCASE("symlink in place of a listed file") {
    check([&](auto &m) { m.back() = special(listed, AE_IFLNK, "/etc/passwd"); }, "is a symbolic link");
  }
  SUBCASE("hard link in place of a listed file") {
    check([&](auto &m) { m.back() = special(listed, AE_IFREG, "/etc/passwd"); }, "is a hard link");
  }
  SUBCASE("device in place of a listed file") {
    check([&](auto &m) { m.back() = special(listed, AE_IFCHR); }, "is a character device");
  }
  SUBCASE("oversize member: more bytes than the index says") {
    check([&](auto &m) { m.back().bytes += std::string(1 << 20, 'A'); }, "bytes, its index says");
  }
  SUBCASE("a header claiming more than the index") {
    check([&](auto &m) { m.back().header_size = static_cast<std::int64_t>(m.back().bytes.size()) + 1; }, "bytes, its index says");
  }
  SUBCASE("duplicate member") {
    check([&](auto &m) { m.push_back(m.back()); }, "twice");
  }
  SUBCASE("member not listed in the index") {
    check([&](auto &m) { m.push_back(plain(listed + "-extra", "x")); }, "not listed in its index");
  }
  SUBCASE("a second index after the signature") {
    check([&](auto &m) { m.push_back(m[0]); }, "twice");
  }
  SUBCASE("the index not first") {
    check([&](auto &m) { std::swap(m[0], m[2]); }, "not kiln-bundle.json");
  }
}

TEST_CASE("bundle: a built device-image artifact (nvrtc) carries every image and its input key, not its build log" *
          kiln::test::skip_if(kiln::test::no_nvrtc)) {
  TempDir dir;
  fs::create_directories(dir / "src");
  write_text(dir / "src" / "kernels.cu", "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, int n) {\n"
                                         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n");
  write_text(dir / "src" / "recipe.json", R"({"schema": 1, "consumer": "jit-tests", "name": "saxpy", "backend": "nvrtc",
    "sources": ["kernels.cu"], "archs": ["sm_90", "compute_90"], "kernels": ["saxpy"]})");
  kiln::RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  options.declared_device = "sm_90";
  kiln::Runtime runtime(options);
  const kiln::BuildResult built = runtime.build(kiln::Recipe::load((dir / "src" / "recipe.json").string()));
  REQUIRE(fs::exists(fs::path(built.entry_dir) / "build.log"));

  kiln::ExportRequest out;
  out.consumer = "jit-tests";
  out.output = (dir / "jit.kbundle").string();
  const kiln::ExportReport exported = runtime.export_bundle(out);
  REQUIRE(exported.entries.size() == 1);
  CHECK(exported.entries[0].kind == "images");
  CHECK_FALSE(exported.entries[0].input_key.empty());
  bool has_log = false;
  for (const auto &member : read_members(dir / "jit.kbundle")) has_log = has_log || member.name.find("build.log") != std::string::npos;
  CHECK_FALSE(has_log);

  kiln::ImportRequest in;
  in.bundle = out.output;
  in.into = (dir / "vendor").string();
  in.allow_unsigned = true;
  REQUIRE(runtime.import_bundle(in).entries.at(0).status == "added");
  kiln::RuntimeOptions robot;
  robot.cache_dir = (dir / "robot-cache").string();
  robot.read_only_stores = {(dir / "vendor").string()};
  robot.declared_device = "sm_90";
  const kiln::Resolution resolution = kiln::Runtime(robot).resolve("jit-tests", "saxpy");
  const kiln::Resolution original = runtime.resolve("jit-tests", "saxpy");
  CHECK(resolution.store_root == (dir / "vendor").string());
  CHECK(resolution.content_key == original.content_key);
  CHECK(resolution.input_key == original.input_key);
  REQUIRE(resolution.images.size() == original.images.size());
  for (const auto &image : resolution.images) {
    CAPTURE(image.file);
    CHECK(read_text(fs::path(resolution.entry_dir) / image.file) == read_text(fs::path(original.entry_dir) / image.file));
  }
  CHECK(fs::exists(dir / "vendor" / "consumers" / "jit-tests" / "bykey" / original.input_key));
}

}  // TEST_SUITE("bundle")
