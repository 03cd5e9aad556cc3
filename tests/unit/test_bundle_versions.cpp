// Release versions and expiry of bundles (src/bundle/release_versions.hpp): a store keeps, per
// consumer, signer and name, the highest release it accepted, and refuses a lower one -- or the
// same release for other bytes -- even after the name was republished; an expired bundle is
// refused unless --allow-expired, with five minutes of clock skew allowed; a bundle of an older
// kiln (no release, no expiry) is still accepted.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bundle/index.hpp"
#include "bundle/keys.hpp"
#include "bundle/release_versions.hpp"
#include "support/bundle_world.hpp"
#include "support/fixtures.hpp"
#include "support/test_plugins.hpp"
#include "support/utc_time.hpp"

namespace bundle_versions {

using kiln::test::BundleWorld;
using kiln::test::file_contents;
using kiln::test::read_text;
using kiln::test::run_kiln;
using nlohmann::json;
namespace fs = boost::filesystem;

// A bundle of the world's consumer, signed by its key, with extra export options.
fs::path exported(const BundleWorld &world, const std::string &file, std::vector<std::string> extra) {
  std::vector<std::string> args{
      "export", "--consumer", "tests", "-o", (world.dir / file).string(), "--sign", world.secret().string(), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto result = run_kiln(args, world.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  return world.dir / file;
}

// Points tests/example of the world's source store at the host-only plugin (other bytes).
std::string republish_example(const BundleWorld &world) {
  const auto result = run_kiln({"publish", "--consumer", "tests", "--name", "example", "--artifact",
                                KILN_TEST_PLUGIN_HOST_ONLY, "--arch", "none", "--json"},
                               world.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  return json::parse(result.out)["content_key"];
}

std::string error_message(const kiln::test::CommandResult &result) {
  return json::parse(result.out)["error"]["message"];
}

fs::path versions_file(const BundleWorld &world) { return world.target() / "consumers" / "tests" / "versions.json"; }

TEST_CASE("bundle versions: a lower release from the same signer is refused, even after the name was republished") {
  BundleWorld world;
  const fs::path release2 = exported(world, "r2.kbundle", {"--release", "2"});
  const std::string second_key = republish_example(world);
  const fs::path release1 = exported(world, "r1.kbundle", {"--release", "1"});
  const fs::path release3 = exported(world, "r3.kbundle", {"--release", "3"});

  auto result = world.import_trusted(release2);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json imported = json::parse(result.out);
  for (const auto &entry : imported["entries"]) CHECK(entry["release_version"] == 2);
  const json state = json::parse(read_text(versions_file(world)));
  CHECK(state["signers"][world.key_id]["example"]["version"] == 2);
  CHECK(state["signers"][world.key_id]["example"]["content_key"] == world.keys.at("example"));

  // Someone on the robot publishes the name by hand: its record no longer says which bundle set it.
  const auto robot_env = world.env(world.dir / "other-cache");
  std::map<std::string, std::string> into_env = robot_env;
  into_env["KILN_CACHE_DIR"] = world.target().string();
  REQUIRE(run_kiln({"publish", "--consumer", "tests", "--name", "example", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY,
                    "--arch", "none"},
                   into_env)
              .exit_code == 0);
  const auto before = file_contents(world.target());

  // Release 1 of the same signer, validly signed, replayed: refused, nothing written.
  result = world.import_trusted(release1);
  CHECK(result.exit_code == 6);
  const std::string message = error_message(result);
  CHECK_MESSAGE(message.find("carries release 1 of tests/example") != std::string::npos, message);
  CHECK_MESSAGE(message.find("accepted release 2") != std::string::npos, message);
  CHECK_MESSAGE(message.find("key " + world.key_id) != std::string::npos, message);
  CHECK_MESSAGE(message.find("--allow-downgrade") != std::string::npos, message);
  CHECK(file_contents(world.target()) == before);

  // A person rolls it back on purpose: done, said, and the store still knows release 2.
  result = world.import(release1, {"--trust", world.pub().string(), "--allow-downgrade"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  std::map<std::string, std::string> status;
  const json downgraded = json::parse(result.out);
  for (const auto &entry : downgraded["entries"]) status[entry["name"]] = entry["status"];
  CHECK(status["example"] == "downgraded");
  CHECK(json::parse(read_text(versions_file(world)))["signers"][world.key_id]["example"]["version"] == 2);
  // The name's record says it was rolled back on purpose, and from what.
  const json manifest = json::parse(read_text(world.target() / "consumers" / "tests" / "manifest.json"));
  const std::string rollback = manifest["artifacts"]["example"].value("rollback", "");
  CHECK_MESSAGE(rollback.find("rolled back with --allow-downgrade on ") == 0, rollback);
  CHECK_MESSAGE(rollback.find("release 1 over release 2") != std::string::npos, rollback);
  CHECK_MESSAGE(rollback.find("key " + world.key_id) != std::string::npos, rollback);
  CHECK(world.import_trusted(release1).exit_code == 6);  // still older than what was accepted

  // Forward again: release 3 is taken and becomes the mark; the record is an ordinary one again.
  result = world.import_trusted(release3);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK_FALSE(json::parse(read_text(world.target() / "consumers" / "tests" / "manifest.json"))["artifacts"]["example"].contains("rollback"));
  CHECK(json::parse(read_text(versions_file(world)))["signers"][world.key_id]["example"]["version"] == 3);
  CHECK(json::parse(read_text(versions_file(world)))["signers"][world.key_id]["example"]["content_key"] == second_key);
}

TEST_CASE("bundle versions: the same release for other bytes is refused; the same release again is already present") {
  BundleWorld world;
  const fs::path first = exported(world, "a.kbundle", {"--release", "5"});
  republish_example(world);
  const fs::path other = exported(world, "b.kbundle", {"--release", "5"});
  REQUIRE(world.import_trusted(first).exit_code == 0);
  auto result = world.import_trusted(other);
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(error_message(result).find("a release version reused for other bytes") != std::string::npos,
                error_message(result));
  result = world.import_trusted(first);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json again = json::parse(result.out);
  for (const auto &entry : again["entries"]) CHECK(entry["status"] == "already present");
}

TEST_CASE("bundle versions: an expired bundle is refused unless --allow-expired; clock skew is allowed") {
  BundleWorld world;
  const fs::path expired = exported(world, "old.kbundle", {"--expires", "2020-01-31T00:00:00Z"});
  auto result = world.import_trusted(expired);
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(error_message(result).find("expired at 2020-01-31T00:00:00Z") != std::string::npos,
                error_message(result));
  CHECK_MESSAGE(error_message(result).find("--allow-expired") != std::string::npos, error_message(result));
  CHECK_FALSE(fs::exists(world.target() / "consumers"));

  result = world.import(expired, {"--trust", world.pub().string(), "--allow-expired"});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["expired"] == true);
  CHECK(json::parse(result.out)["expires"] == "2020-01-31T00:00:00Z");

  // Expired a minute ago by this clock: within the skew an exporter's clock may be ahead.
  const fs::path recent =
      exported(world, "recent.kbundle", {"--expires", kiln::support::format_utc_time(std::time(nullptr) - 60)});
  result = world.import_trusted(recent);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["expired"] == false);

  // The default is a year; a duration is from now; anything else is a usage error naming it.
  const json report = json::parse(
      run_kiln({"export", "--consumer", "tests", "-o", (world.dir / "d").string(), "--expires", "90d", "--json"},
               world.env())
          .out);
  const auto expires = kiln::support::parse_utc_time(report["expires"]);
  REQUIRE(expires.has_value());
  CHECK(*expires - std::time(nullptr) > 89 * 86400);
  CHECK(*expires - std::time(nullptr) < 91 * 86400);
  const auto bad =
      run_kiln({"export", "--consumer", "tests", "-o", (world.dir / "e").string(), "--expires", "soon"}, world.env());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--expires 'soon'") != std::string::npos);
}

TEST_CASE("bundle versions: a bundle of an older kiln (no release, no expiry) is imported as before") {
  BundleWorld world;
  std::vector<kiln::test::Member> members = kiln::test::read_members(world.bundle());
  kiln::bundle::Index index = kiln::bundle::parse_index(members[0].bytes, "test");
  REQUIRE_FALSE(index.expires.empty());
  index.expires.clear();
  for (auto &entry : index.entries) {
    for (auto &record : entry.records) record.version = 0;
  }
  members[0].bytes = kiln::bundle::serialize_index(index);
  CHECK(members[0].bytes.find("\"expires\"") == std::string::npos);
  kiln::bundle::SecretKey key;
  kiln::bundle::load_secret(key, world.secret().string());
  members[1].bytes = kiln::bundle::serialize_signature({key.key_id, key.sign(members[0].bytes)});
  const fs::path old = world.dir / "older-kiln.kbundle";
  kiln::test::write_members(old, members);
  const auto result = world.import_trusted(old);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["expires"].is_null());
  const json imported = json::parse(result.out);
  for (const auto &entry : imported["entries"]) CHECK(entry["release_version"] == 0);
  CHECK_FALSE(fs::exists(versions_file(world)));
}

TEST_CASE("bundle versions: a damaged versions file is refused, naming it, and nothing is imported") {
  BundleWorld world;
  REQUIRE(world.import_trusted(world.bundle()).exit_code == 0);
  kiln::test::write_text(versions_file(world), "{\"format\": \"kiln-versions\", \"version\": 1, \"signers\": [");
  const auto before = file_contents(world.target());
  const fs::path newer = exported(world, "n.kbundle", {"--release", "99999999999"});
  const auto result = world.import_trusted(newer);
  CHECK(result.exit_code == 6);
  CHECK_MESSAGE(error_message(result).find(versions_file(world).string()) != std::string::npos, error_message(result));
  CHECK(file_contents(world.target()) == before);
}

}  // namespace bundle_versions
