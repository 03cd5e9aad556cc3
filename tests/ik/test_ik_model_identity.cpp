// The robot model in a plugin's identity: the headers kiln-urdf-fk writes put the model's canonical
// text into the plugin file (section .kiln.model); kiln publish records its fingerprint and chain
// in identity.json (a claim kiln verify checks against the file); a host that requires a model
// (LoadOptions::model, kiln load --model URDF --base --tip) loads a plugin of that model and refuses
// (exit 4) one of another, naming both fingerprints and the first link or joint that differs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <kiln/dynamics.hpp>
#include <kiln/runtime.hpp>
#include <kiln/verify.hpp>

#include "artifact/elf.hpp"
#include "artifact/model_record.hpp"
#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/model_check.hpp"
#include "support/plugin_store.hpp"

namespace {

namespace fs = boost::filesystem;
using kiln::test::contains;
using nlohmann::json;

const fs::path kRobots = KILN_IK_ROBOTS_DIR;

// kiln-urdf-fk --check --model-text on a chain given as "base -> tip".
using Checked = kiln::test::CheckedModel;
Checked check_model(const fs::path &urdf, const std::string &chain) {
  const std::size_t arrow = chain.find(" -> ");
  REQUIRE(arrow != std::string::npos);
  return kiln::test::check_model(KILN_URDF_FK_PATH, urdf.string(), chain.substr(0, arrow), chain.substr(arrow + 4));
}

// iiwa14.urdf with one number of one joint changed: `from` replaced by `to` once, inside the
// element of joint `joint`.
fs::path changed_urdf(const kiln::test::TempDir &dir, const std::string &joint, const std::string &from,
                      const std::string &to) {
  std::string text = kiln::test::read_text(kRobots / "iiwa14.urdf");
  const std::size_t at = text.find("<joint name=\"" + joint + "\"");
  REQUIRE(at != std::string::npos);
  const std::size_t value = text.find(from, at);
  REQUIRE(value != std::string::npos);
  REQUIRE(value < text.find("</joint>", at));
  text.replace(value, from.size(), to);
  const fs::path file = dir / "iiwa14_changed.urdf";
  kiln::test::write_text(file, text);
  return file;
}

}  // namespace

TEST_CASE("model identity: a generated plugin holds its model's text, which digests to kiln-urdf-fk's fingerprint") {
  for (const char *plugin : {KILN_IK_PLUGIN_IIWA14, KILN_IK_PLUGIN_PANDA}) {
    CAPTURE(std::string(plugin));
    const std::vector<std::string> texts = kiln::robot_model_texts(plugin);
    REQUIRE(texts.size() == 1);  // every object file that included the header holds it: one model
    const std::string chain = kiln::artifact::model_chain_of(texts[0]);
    const bool iiwa = std::string(plugin) == KILN_IK_PLUGIN_IIWA14;
    const Checked checked = check_model(kRobots / (iiwa ? "iiwa14.urdf" : "panda.urdf"), chain);
    CHECK(texts[0] == checked.text);
    CHECK(kiln::artifact::model_fingerprint_of(texts[0]) == checked.fingerprint);
  }
  CHECK(kiln::robot_model_texts(KILN_TEST_PLUGIN_HOST_ONLY).empty());  // not generated from a URDF
}

TEST_CASE(
    "model identity: publish records the file's models; a required model loads its plugin and refuses "
    "another, naming both fingerprints and the first differing joint") {
  kiln::test::TempDir dir;
  kiln::Runtime runtime(kiln::test::store_options(dir));
  const kiln::PublishResult published = kiln::test::publish_plugin(runtime, KILN_IK_PLUGIN_IIWA14, "iiwa14");
  const json identity = json::parse(kiln::test::read_text(fs::path(published.entry_dir) / "identity.json"));
  REQUIRE(identity.contains("models"));
  REQUIRE(identity["models"].size() == 1);
  const std::string chain = identity["models"][0]["chain"];
  const Checked iiwa = check_model(kRobots / "iiwa14.urdf", chain);
  CHECK(identity["models"][0]["fingerprint"] == iiwa.fingerprint);
  CHECK(runtime.resolve("tests", "iiwa14").identity.models == std::vector<kiln::RobotModel>{{iiwa.fingerprint, chain}});

  kiln::LoadOptions options;
  options.model = {iiwa.fingerprint, iiwa.text};
  CHECK(runtime.load("tests", "iiwa14", options).report().resolution.identity.models.size() == 1);

  // One joint's upper limit changed: another model, and the refusal names that joint.
  const fs::path changed = changed_urdf(dir, "lbr_iiwa_joint_4", "upper=\"2.09439510239\"", "upper=\"2.0\"");
  const Checked other = check_model(changed, chain);
  REQUIRE(other.fingerprint != iiwa.fingerprint);
  options.model = {other.fingerprint, other.text};
  kiln::ErrorKind kind{};
  const std::string refusal = kiln::test::error_of([&] { runtime.load("tests", "iiwa14", options); }, &kind);
  CHECK(kind == kiln::ErrorKind::incompatible);
  CHECK(contains(refusal, "robot_model"));
  CHECK(contains(refusal, iiwa.fingerprint));
  CHECK(contains(refusal, other.fingerprint));
  CHECK(contains(refusal, "\"joint lbr_iiwa_joint_4 revolute"));
  CHECK_MESSAGE(contains(refusal, "limit -2.09439510239 2 effort"), refusal);
  CHECK_FALSE(contains(refusal, "lbr_iiwa_joint_3 revolute"));  // the first difference only

  // The fingerprint alone: refused all the same, and told how to compare the texts.
  options.model = {other.fingerprint, ""};
  const std::string bare = kiln::test::error_of([&] { runtime.load("tests", "iiwa14", options); }, &kind);
  CHECK(kind == kiln::ErrorKind::incompatible);
  CHECK(contains(bare, "--model-text"));

  // A plugin not generated from a robot model is refused for any required one.
  kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY, "host");
  options.model = {iiwa.fingerprint, ""};
  const std::string none = kiln::test::error_of([&] { runtime.load("tests", "host", options); }, &kind);
  CHECK(kind == kiln::ErrorKind::incompatible);
  CHECK(contains(none, "none (not generated from a robot model)"));

  // What is not a fingerprint is a usage error naming it.
  options.model = {"md5:1234", ""};
  const std::string bad = kiln::test::error_of([&] { runtime.load("tests", "iiwa14", options); }, &kind);
  CHECK(kind == kiln::ErrorKind::usage);
  CHECK(contains(bad, "'md5:1234' is not a model fingerprint"));

  // A dynamics probe (kiln/dynamics.hpp) of a plugin generated without dynamics, or of one that
  // describes no robot model: refused, whatever the torques.
  const std::vector<kiln::DynamicsState> state = {{std::vector<double>(7, 0.0), std::vector<double>(7, 0.0),
                                                   std::vector<double>(7, 0.0), std::vector<double>(7, 0.0)}};
  const kiln::Module ik = runtime.load("tests", "iiwa14");
  const std::string no_rnea =
      kiln::test::error_of([&] { kiln::probe_dynamics(ik, ik.create_instance(), state); }, &kind);
  CHECK(kind == kiln::ErrorKind::incompatible);
  CHECK(contains(no_rnea, "generated without dynamics"));
  const kiln::Module host = runtime.load("tests", "host");
  const std::string no_model =
      kiln::test::error_of([&] { kiln::probe_dynamics(host, host.create_instance(), state); }, &kind);
  CHECK(kind == kiln::ErrorKind::incompatible);
  CHECK(contains(no_model, "describes no robot model"));
}

TEST_CASE(
    "model identity: kiln load --model refuses another robot's plugin (exit 4) and loads its own; kiln show "
    "prints the model and its text") {
  kiln::test::TempDir dir;
  const auto env = kiln::test::cli_env(dir / "cache");
  auto result = kiln::test::run_kiln(
      {"publish", "--consumer", "tests", "--name", "iiwa14", "--artifact", KILN_IK_PLUGIN_IIWA14}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string chain = kiln::artifact::model_chain_of(kiln::robot_model_texts(KILN_IK_PLUGIN_IIWA14).at(0));
  const std::string base = chain.substr(0, chain.find(" -> ")), tip = chain.substr(chain.find(" -> ") + 4);
  const Checked iiwa = check_model(kRobots / "iiwa14.urdf", chain);

  result = kiln::test::run_kiln(
      {"load", "tests", "iiwa14", "--model", (kRobots / "iiwa14.urdf").string(), "--base", base, "--tip", tip}, env);
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.out, "model    " + iiwa.fingerprint + " (" + chain + "): the required one"));

  const fs::path changed = changed_urdf(dir, "lbr_iiwa_joint_2", "effort=\"300\"", "effort=\"330\"");
  result =
      kiln::test::run_kiln({"load", "tests", "iiwa14", "--model", changed.string(), "--base", base, "--tip", tip}, env);
  CHECK(result.exit_code == 4);
  CHECK(contains(result.err, iiwa.fingerprint));
  CHECK(contains(result.err, check_model(changed, chain).fingerprint));
  CHECK(contains(result.err, "joint lbr_iiwa_joint_2 revolute"));

  result = kiln::test::run_kiln({"load", "tests", "iiwa14", "--model-fingerprint", iiwa.fingerprint}, env);
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  result = kiln::test::run_kiln({"load", "tests", "iiwa14", "--model", (kRobots / "iiwa14.urdf").string()}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "--base LINK --tip LINK"));
  result = kiln::test::run_kiln({"load", "tests", "iiwa14", "--model", (kRobots / "iiwa14.urdf").string(), "--base",
                                 base, "--tip", "no_such_link"},
                                env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "no_such_link"));

  result = kiln::test::run_kiln({"show", "tests", "iiwa14", "--model-text"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.out, "model " + iiwa.fingerprint + " (" + chain + ")"));
  CHECK(contains(result.out, iiwa.text));
  result = kiln::test::run_kiln({"show", "tests", "iiwa14", "--json"}, env);
  REQUIRE(result.exit_code == 0);
  CHECK(json::parse(result.out)["resolution"]["identity"]["models"][0]["fingerprint"] == iiwa.fingerprint);
}

TEST_CASE("model identity: an entry recording a model its file does not hold is damage kiln verify finds") {
  kiln::test::TempDir dir;
  kiln::Runtime runtime(kiln::test::store_options(dir));
  const kiln::PublishResult published = kiln::test::publish_plugin(runtime, KILN_IK_PLUGIN_IIWA14, "iiwa14");
  const fs::path identity_file = fs::path(published.entry_dir) / "identity.json";
  json identity = json::parse(kiln::test::read_text(identity_file));
  const std::string recorded = identity["models"][0]["fingerprint"];
  SUBCASE("another fingerprint") { identity["models"][0]["fingerprint"] = "xxh128:" + std::string(32, '0'); }
  SUBCASE("no model at all") { identity.erase("models"); }
  fs::permissions(identity_file, fs::owner_read | fs::owner_write);
  kiln::test::write_text(identity_file, identity.dump(2));
  const auto result = kiln::test::run_kiln({"verify", "--json"}, kiln::test::cli_env(dir / "cache"));
  CHECK(result.exit_code == 6);
  CHECK(contains(result.out, "robot model"));
  CHECK(contains(result.out, recorded));
}

TEST_CASE("model identity: a damaged .kiln.model section is an integrity error naming the file") {
  std::string bytes = kiln::test::read_text(KILN_IK_PLUGIN_IIWA14);
  const auto section = kiln::artifact::find_elf_section(bytes, kiln::artifact::kModelSection);
  REQUIRE(section.has_value());
  const auto [offset, size] = *section;
  std::string damaged = bytes;
  SUBCASE("not a model text") {
    damaged[damaged.find("kiln-model 1", offset)] = 'K';
    CHECK(contains(kiln::test::error_of([&] { kiln::artifact::read_model_records(damaged, "plugin.so"); }),
                   "plugin.so: its section .kiln.model holds something other than a kiln model text"));
  }
  SUBCASE("no terminating NUL") {
    for (std::size_t i = offset; i < offset + size; ++i) {
      if (damaged[i] == '\0') damaged[i] = '\n';
    }
    CHECK(contains(kiln::test::error_of([&] { kiln::artifact::read_model_records(damaged, "plugin.so"); }),
                   "ends inside a model text"));
  }
}
