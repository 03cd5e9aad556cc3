// Key lists (src/bundle/key_list.hpp, trust_store.hpp, signer_check.hpp; kiln key): a store that
// pins a root judges every bundle's signer by the newest list that root vouches for -- role,
// consumers, expiry, revocation -- follows root rotations the old root endorsed, and refuses a
// list of another root, an older generation, a forked chain or altered bytes, leaving nothing.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "bundle/index.hpp"
#include "bundle/key_list.hpp"
#include "bundle/reader.hpp"
#include "store/storage.hpp"
#include "support/bundle_world.hpp"
#include "support/fixtures.hpp"
#include "support/utc_time.hpp"

namespace key_lists {

using kiln::test::BundleWorld;
using kiln::test::CommandResult;
using kiln::test::file_contents;
using kiln::test::read_text;
using kiln::test::run_kiln;
using nlohmann::json;
namespace fs = boost::filesystem;

// A fleet: a root key, a release key and a key list naming it, and a robot store (the world's
// target) that pins the root.
struct Fleet {
  BundleWorld world;
  fs::path list = world.dir / "fleet-keys.json";

  Fleet() {
    keygen("root");
    keygen("release");
    must({"key", "init", list.string(), "--root", key("root")});
    must({"key", "add", list.string(), "--root", key("root"), "--key", pub("release"), "--role", "release"});
    must({"key", "trust", "--root", pub("root"), "--into", world.target().string()});
  }

  std::string key(const std::string &name) const { return (world.dir / (name + ".key")).string(); }
  std::string pub(const std::string &name) const { return (world.dir / (name + ".pub")).string(); }
  std::string key_id(const std::string &name) const { return read_text(world.dir / (name + ".pub")).substr(34, 16); }
  std::string keygen(const std::string &name) const {
    must({"keygen", "-o", (world.dir / name).string()});
    return key_id(name);
  }
  json must(std::vector<std::string> args) const {
    args.push_back("--json");
    const CommandResult result = run_kiln(args, world.env());
    REQUIRE_MESSAGE(result.exit_code == 0, args[0] << " " << args[1] << ": " << result.out << result.err);
    return result.out.empty() ? json() : json::parse(result.out);
  }
  // A bundle of the world's consumer signed by `signer`, carrying `carried` when given.
  fs::path exported(const std::string &file, const std::string &signer, const fs::path &carried = {}) const {
    std::vector<std::string> args{"export", "--consumer", "tests", "-o", (world.dir / file).string(),
                                  "--sign", key(signer)};
    if (!carried.empty()) args.insert(args.end(), {"--key-list", carried.string()});
    must(args);
    return world.dir / file;
  }
  CommandResult import(const fs::path &bundle, std::vector<std::string> extra = {}) const {
    return world.import(bundle, extra);
  }
  json trust_state() const {
    const auto result = run_kiln({"key", "list", "--json"}, store_env());
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    return json::parse(result.out);
  }
  // A process whose writable cache is the robot store.
  std::map<std::string, std::string> store_env() const {
    auto env = world.env();
    env["KILN_CACHE_DIR"] = world.target().string();
    return env;
  }
};

std::string message_of(const CommandResult &result) { return json::parse(result.out)["error"]["message"]; }

std::string created_of(const fs::path &bundle) {
  for (const auto &member : kiln::test::read_members(bundle)) {
    if (member.name == kiln::bundle::kIndexMember) return json::parse(member.bytes)["created"];
  }
  FAIL("no index in " << bundle);
  return "";
}

TEST_CASE(
    "key lists: a bundle signed by a listed release key imports and brings the list; an unlisted key is refused") {
  Fleet fleet;
  const fs::path bundle = fleet.exported("ok.kbundle", "release", fleet.list);
  auto result = fleet.import(bundle);
  REQUIRE_MESSAGE(result.exit_code == 0, result.out << result.err);
  const json report = json::parse(result.out);
  CHECK(report["signature_verified"] == true);
  CHECK(report["signed_by"] == fleet.key_id("release"));
  CHECK(report["key_list_generation"] == 2);
  const json state = fleet.trust_state();
  CHECK(state["root"]["key_id"] == fleet.key_id("root"));
  CHECK(state["key_list"]["generation"] == 2);
  CHECK(state["key_list"]["keys"][0]["key_id"] == fleet.key_id("release"));
  CHECK(state["key_list"]["keys"][0]["status"] == "valid");

  // The world's own vendor key is in no list: refused, and no --allow-unsigned gets around it.
  const auto before = file_contents(fleet.world.target());
  result = fleet.import(fleet.world.bundle());
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("is signed by key " + fleet.world.key_id +
                                        ", which is none of the trusted keys") != std::string::npos,
                message_of(result));
  const fs::path unsigned_bundle = fleet.world.dir / "unsigned.kbundle";
  REQUIRE(run_kiln({"export", "--consumer", "tests", "-o", unsigned_bundle.string()}, fleet.world.env()).exit_code ==
          0);
  result = fleet.import(unsigned_bundle, {"--allow-unsigned"});
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(
      message_of(result).find("is not signed, and this store follows key list generation 2") != std::string::npos,
      message_of(result));
  CHECK(file_contents(fleet.world.target()) == before);
}

TEST_CASE("key lists: a store with a pinned root and no list refuses every bundle until one comes") {
  Fleet fleet;
  const auto result = fleet.import(fleet.exported("nolist.kbundle", "release"));
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("holds no key list it signed") != std::string::npos, message_of(result));
  CHECK(!fs::exists(fleet.world.target() / "consumers" / "tests" / "manifest.json"));
}

TEST_CASE("key lists: a revoked key is refused for what it signed from its revocation time, or for everything") {
  Fleet fleet;
  const fs::path bundle = fleet.exported("signed.kbundle", "release");
  const std::string created = created_of(bundle);
  const auto at = *kiln::support::parse_utc_time(created);

  // Revoked from one second after the bundle was signed: the bundle is still good.
  fleet.must({"key", "revoke", fleet.list.string(), "--root", fleet.key("root"), "--key-id", fleet.key_id("release"),
              "--at", kiln::support::format_utc_time(at + 1), "--reason", "retired"});
  fleet.must({"key", "trust", "--key-list", fleet.list.string(), "--into", fleet.world.target().string()});
  auto result = fleet.import(bundle);
  REQUIRE_MESSAGE(result.exit_code == 0, result.out << result.err);

  // Revoked from the second it was signed: refused (a fresh robot store, the same list).
  fleet.must({"key", "revoke", fleet.list.string(), "--root", fleet.key("root"), "--key-id", fleet.key_id("release"),
              "--at", created});
  const json listed = fleet.must({"key", "show", fleet.key_id("release"), fleet.list.string()});
  CHECK(listed["status"] == "revoked");
  CHECK(listed["revoked"]["at"] == created);  // a revocation only moves earlier
  fleet.must({"key", "trust", "--key-list", fleet.list.string(), "--into", fleet.world.target().string()});
  const auto before = file_contents(fleet.world.target());
  result = fleet.import(bundle);
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("is revoked since " + created) != std::string::npos, message_of(result));
  CHECK(file_contents(fleet.world.target()) == before);

  // --trust with the revoked key's own .pub does not outrank the list.
  result = fleet.import(bundle, {"--trust", fleet.pub("release")});
  CHECK(result.exit_code == 6);

  // Revoked for everything: a bundle it backdates is refused too.
  fleet.must({"key", "revoke", fleet.list.string(), "--root", fleet.key("root"), "--key-id", fleet.key_id("release"),
              "--all", "--reason", "stolen"});
  fleet.must({"key", "trust", "--key-list", fleet.list.string(), "--into", fleet.world.target().string()});
  result = fleet.import(bundle);
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("is revoked for everything it signed: stolen") != std::string::npos,
                message_of(result));
}

TEST_CASE("key lists: a root rotated twice is followed from the first root; the rotated-away root cannot sign again") {
  Fleet fleet;
  // The robot took generation 2 under the first root.
  REQUIRE(fleet.import(fleet.exported("g2.kbundle", "release", fleet.list)).exit_code == 0);
  const fs::path before_rotation = fleet.world.dir / "g2-keys.json";
  fs::copy_file(fleet.list, before_rotation);

  fleet.keygen("root2");
  fleet.keygen("root3");
  fleet.keygen("release2");
  fleet.must(
      {"key", "rotate-root", fleet.list.string(), "--root", fleet.key("root"), "--new-root", fleet.key("root2")});
  fleet.must(
      {"key", "rotate-root", fleet.list.string(), "--root", fleet.key("root2"), "--new-root", fleet.key("root3")});
  const json list = fleet.must({"key", "add", fleet.list.string(), "--root", fleet.key("root3"), "--key",
                                fleet.pub("release2"), "--role", "release", "--consumer", "tests"});
  CHECK(list["generation"] == 5);
  CHECK(list["roots"] == json::array({fleet.key_id("root"), fleet.key_id("root2"), fleet.key_id("root3")}));

  // The old root cannot edit the list any more.
  auto result = run_kiln({"key", "add", fleet.list.string(), "--root", fleet.key("root"), "--key",
                          fleet.pub("release2"), "--role", "build", "--json"},
                         fleet.world.env());
  CHECK(result.exit_code == 2);

  // Two generations of rotation later, the robot pinned to the first root takes the list with a
  // bundle signed by a key only the newest list names.
  result = fleet.import(fleet.exported("g5.kbundle", "release2", fleet.list));
  REQUIRE_MESSAGE(result.exit_code == 0, result.out << result.err);
  CHECK(json::parse(result.out)["key_list_generation"] == 5);
  CHECK(fleet.trust_state()["key_list"]["roots"].size() == 3);

  // Whoever kept the first root signs a list of a higher generation on the old chain: refused.
  for (int i = 0; i < 5; ++i) {
    fleet.must({"key", "add", before_rotation.string(), "--root", fleet.key("root"), "--key", fleet.pub("release"),
                "--role", "release"});
  }
  CHECK(kiln::bundle::parse_key_list(read_text(before_rotation), "fork").generation == 7);
  const auto state = file_contents(fleet.world.target() / "trust");
  result = run_kiln(
      {"key", "trust", "--key-list", before_rotation.string(), "--into", fleet.world.target().string(), "--json"},
      fleet.world.env());
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(
      message_of(result).find("whose chain does not pass through root " + fleet.key_id("root3")) != std::string::npos,
      message_of(result));
  CHECK(file_contents(fleet.world.target() / "trust") == state);
}

TEST_CASE("key lists: a list signed by the wrong root, or altered, or older is refused and changes nothing") {
  Fleet fleet;
  REQUIRE(fleet.import(fleet.exported("g2.kbundle", "release", fleet.list)).exit_code == 0);
  const auto state = file_contents(fleet.world.target());

  // Another root's list, carried by a bundle its key signed.
  fleet.keygen("other-root");
  const fs::path other = fleet.world.dir / "other-keys.json";
  fleet.must({"key", "init", other.string(), "--root", fleet.key("other-root")});
  for (int i = 0; i < 3; ++i) {
    fleet.must({"key", "add", other.string(), "--root", fleet.key("other-root"), "--key", fleet.pub("release"),
                "--role", "release"});
  }
  auto result = fleet.import(fleet.exported("other.kbundle", "release", other));
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("is signed by the wrong root: this store trusts root " +
                                        fleet.key_id("root")) != std::string::npos,
                message_of(result));
  CHECK(file_contents(fleet.world.target()) == state);

  // The fleet's list with a key's consumers changed by hand: its signature no longer verifies.
  std::string text = read_text(fleet.list);
  const auto consumers = text.find("\"*\"");
  REQUIRE(consumers != std::string::npos);
  text.replace(consumers, 3, "\"tests\"");
  const fs::path altered = fleet.world.dir / "altered.json";
  kiln::test::write_text(altered, text);
  result = run_kiln({"key", "trust", "--key-list", altered.string(), "--into", fleet.world.target().string(), "--json"},
                    fleet.world.env());
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("its signature does not verify with its root") != std::string::npos,
                message_of(result));

  // Generation 3 accepted, then generation 2 offered again: refused as older.
  const fs::path g2 = fleet.world.dir / "g2.json";
  fs::copy_file(fleet.list, g2);
  fleet.must({"key", "add", fleet.list.string(), "--root", fleet.key("root"), "--key", fleet.pub("release"), "--role",
              "release", "--role", "build"});
  fleet.must({"key", "trust", "--key-list", fleet.list.string(), "--into", fleet.world.target().string()});
  result = run_kiln({"key", "trust", "--key-list", g2.string(), "--into", fleet.world.target().string(), "--json"},
                    fleet.world.env());
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(
      message_of(result).find("is older than the one this store accepted (generation 2 offered, 3 accepted)") !=
          std::string::npos,
      message_of(result));
  // A bundle that still carries generation 2 is judged by the store's generation 3, which stays.
  result = fleet.import(fleet.exported("older-list.kbundle", "release", g2));
  CHECK_MESSAGE(result.exit_code == 0, result.out << result.err);
  CHECK(json::parse(result.out)["key_list_generation"] == 0);
  CHECK(fleet.trust_state()["key_list"]["generation"] == 3);

  // A second root pinned beside the first: refused.
  result =
      run_kiln({"key", "trust", "--root", fleet.pub("other-root"), "--into", fleet.world.target().string(), "--json"},
               fleet.world.env());
  CHECK(result.exit_code == 2);
  CHECK_MESSAGE(message_of(result).find("already trust root " + fleet.key_id("root")) != std::string::npos,
                message_of(result));
}

TEST_CASE("key lists: roles, consumers, key expiry and list expiry limit what a listed key may sign") {
  Fleet fleet;
  fleet.keygen("builder");
  fleet.keygen("other-team");
  fleet.must({"key", "add", fleet.list.string(), "--root", fleet.key("root"), "--key", fleet.pub("builder"), "--role",
              "build"});
  fleet.must({"key", "add", fleet.list.string(), "--root", fleet.key("root"), "--key", fleet.pub("other-team"),
              "--role", "release", "--consumer", "someone-else"});
  fleet.must({"key", "trust", "--key-list", fleet.list.string(), "--into", fleet.world.target().string()});

  // export refuses to carry a list that would refuse the bundle; without the list the store judges.
  auto result = run_kiln({"export", "--consumer", "tests", "-o", (fleet.world.dir / "b.kbundle").string(), "--sign",
                          fleet.key("builder"), "--key-list", fleet.list.string(), "--json"},
                         fleet.world.env());
  CHECK(result.exit_code == 2);
  CHECK_MESSAGE(message_of(result).find("may sign for build, not release") != std::string::npos, message_of(result));
  result = fleet.import(fleet.exported("b.kbundle", "builder"));
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("may sign for build, not release") != std::string::npos, message_of(result));
  result = fleet.import(fleet.exported("o.kbundle", "other-team"));
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("may not sign for consumer tests") != std::string::npos, message_of(result));

  // A key past its own expiry signs nothing new.
  fleet.must({"key", "add", fleet.list.string(), "--root", fleet.key("root"), "--key", fleet.pub("release"), "--role",
              "release", "--key-expires", "2020-01-01T00:00:00Z"});
  fleet.must({"key", "trust", "--key-list", fleet.list.string(), "--into", fleet.world.target().string()});
  result = fleet.import(fleet.exported("late.kbundle", "release"));
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("expired 2020-01-01T00:00:00Z") != std::string::npos, message_of(result));

  // A list past its expiry: refused unless --allow-expired (a robot whose clock is wrong).
  fleet.must({"key", "add", fleet.list.string(), "--root", fleet.key("root"), "--key", fleet.pub("release"), "--role",
              "release", "--expires", "2020-01-01T00:00:00Z"});
  const fs::path bundle = fleet.exported("stale.kbundle", "release", fleet.list);
  result = fleet.import(bundle);
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(message_of(result).find("expired at 2020-01-01T00:00:00Z") != std::string::npos, message_of(result));
  result = fleet.import(bundle, {"--allow-expired"});
  CHECK_MESSAGE(result.exit_code == 0, result.out << result.err);
}

TEST_CASE("key lists: a robot's read-only layer pins the root; a newer list a bundle brings is kept in its cache") {
  Fleet fleet;
  const fs::path layer = fleet.world.target();
  fleet.must({"key", "trust", "--key-list", fleet.list.string(), "--into", layer.string()});  // generation 2, in the image
  fleet.keygen("release2");
  fleet.must({"key", "add", fleet.list.string(), "--root", fleet.key("root"), "--key", fleet.pub("release2"), "--role",
              "release"});
  const fs::path bundle = fleet.exported("g3.kbundle", "release2", fleet.list);
  const auto image = file_contents(layer);

  auto robot = fleet.world.env(fleet.world.dir / "robot-cache");
  robot["KILN_STORE_PATH"] = layer.string();
  auto result = run_kiln({"import", bundle.string(), "--json"}, robot);
  REQUIRE_MESSAGE(result.exit_code == 0, result.out << result.err);
  CHECK(json::parse(result.out)["key_list_generation"] == 3);
  CHECK(file_contents(layer) == image);  // the layer is never written
  result = run_kiln({"key", "list", "--json"}, robot);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json state = json::parse(result.out);
  CHECK(state["root"]["file"] == (layer / "trust" / "root.pub").string());
  CHECK(state["key_list"]["generation"] == 3);
  CHECK(state["key_list"]["file"] == (fleet.world.dir / "robot-cache" / "trust" / "keys.json").string());

  // The robot's cache pinning another root beside the layer's: refused, not chosen between.
  fleet.keygen("intruder");
  result = run_kiln({"key", "trust", "--root", fleet.pub("intruder"), "--json"}, robot);
  CHECK(result.exit_code != 0);
  CHECK(!fs::exists(fleet.world.dir / "robot-cache" / "trust" / "root.pub"));
}

TEST_CASE("key lists: a remote entry's signer needs the build role") {
  Fleet fleet;
  fleet.keygen("builder");
  fleet.must({"key", "add", fleet.list.string(), "--root", fleet.key("root"), "--key", fleet.pub("builder"), "--role",
              "build", "--consumer", "tests"});
  fleet.must({"key", "trust", "--key-list", fleet.list.string(), "--into", fleet.world.target().string()});
  const kiln::store::Storage robot({kiln::store::StoreLocation{fleet.world.target(), true, "test"}});
  const auto fetch = [&](const fs::path &bundle) {
    return kiln::bundle::read_entry_bundle(robot, {bundle.string(), "tests", "", "", {}, false}, {});
  };
  // Valid for less than a remote entry's lifetime, as an upload is.
  const auto one_entry = [&](const std::string &file, const std::string &signer) {
    fleet.must({"export", "--consumer", "tests", "--name", "example", "-o", (fleet.world.dir / file).string(), "--sign",
                fleet.key(signer), "--expires", "30d"});
    return fleet.world.dir / file;
  };
  const auto fetched = fetch(one_entry("built.kbundle", "builder"));
  CHECK(fetched.signed_by == fleet.key_id("builder"));
  CHECK(fetched.content_key == fleet.world.keys.at("example"));
  CHECK_THROWS_WITH_AS(fetch(one_entry("released.kbundle", "release")),
                       doctest::Contains("may sign for release, not build"), kiln::IntegrityError);
  // An unsigned entry: no key list lets it through.
  const fs::path unsigned_entry = fleet.world.dir / "unsigned-entry.kbundle";
  REQUIRE(
      run_kiln({"export", "--consumer", "tests", "--name", "example", "-o", unsigned_entry.string(), "--expires", "30d"},
               fleet.world.env())
          .exit_code == 0);
  CHECK_THROWS_WITH_AS(fetch(unsigned_entry), doctest::Contains("is not signed"), kiln::IntegrityError);
}

}  // namespace key_lists
