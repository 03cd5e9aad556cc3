// kiln TrajOpt tests: the robot model in a plugin with dynamics. Its generated headers carry the
// model with the gravity the dynamics apply, so the fingerprint kiln records is that of the URDF,
// the chain, the generators and the gravity: kiln-urdf-fk --check --dynamics-check prints it, the
// kinematic model (--check alone) is another, and kiln load --model ... --gravity X Y Z loads the
// plugin under its own gravity and refuses (exit 4) it under another, naming the gravity line.
// This translation unit includes the Panda's generated headers (trajopt_test_support.hpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <kiln/ext/robotmodel.h>
#include <kiln/identity.hpp>

#include "artifact/model_record.hpp"
#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/robotmodel_checks.hpp"
#include "trajopt_test_support.hpp"

namespace {

namespace fs = boost::filesystem;
using kiln::test::contains;
using namespace kiln::test::trajopt;

const std::string kPanda = plugin_file("KILN_TRAJOPT_PLUGIN_PANDA", KILN_TRAJOPT_PLUGIN_PANDA);
const std::string kPandaUrdf = std::string(KILN_TRAJOPT_ROBOTS_DIR) + "/panda.urdf";
const std::string kBase = "panda_link0", kTip = "panda_grasptarget";

// kiln-urdf-fk --check on the Panda's chain with `options`: its fingerprint and canonical text.
struct Checked {
  std::string fingerprint, text;
};
Checked check_model(const std::string &options) {
  const auto result = kiln::test::run_shell(kiln::test::shell_quote(KILN_URDF_FK_PATH) + " " +
                                            kiln::test::shell_quote(kPandaUrdf) + " --base " + kBase + " --tip " +
                                            kTip + " --check --model-text " + options);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::size_t print = result.out.find("fingerprint ");
  const std::size_t text = result.out.find("kiln-model 1\n");
  REQUIRE(print != std::string::npos);
  REQUIRE(text != std::string::npos);
  return {result.out.substr(print + 12, result.out.find('\n', print) - print - 12), result.out.substr(text)};
}

}  // namespace

TEST_CASE("trajopt model identity: the plugin's model includes the gravity its dynamics apply") {
  const Checked dynamics = check_model("--dynamics-check");
  const Checked kinematic = check_model("");
  CHECK(dynamics.fingerprint != kinematic.fingerprint);
  CHECK(kiln::artifact::model_gravity_of(dynamics.text) == "0 0 -9.8100000000000005");
  CHECK(kiln::artifact::model_gravity_of(kinematic.text).empty());
  // The same model under the same gravity given explicitly, and another gravity: another model.
  CHECK(check_model("--dynamics-check --gravity 0 0 -9.81").fingerprint == dynamics.fingerprint);
  CHECK(check_model("--dynamics-check --gravity 0 0 -1.62").fingerprint != dynamics.fingerprint);

  // The plugin file holds exactly that model, and its headers and kiln.robotmodel/1 say so.
  const std::vector<std::string> texts = kiln::robot_model_texts(kPanda);
  REQUIRE(texts.size() == 1);
  CHECK(texts[0] == dynamics.text);
  CHECK(std::string(kiln_fk::Chain::kModelFingerprint) == dynamics.fingerprint);
  Solver s(kPanda, -1, std::nullopt);  // never activated
  const auto *model = s.instance->interface<kiln_robotmodel_v1>(KILN_ROBOTMODEL_INTERFACE_ID);
  REQUIRE(model != nullptr);
  CHECK(std::string(kiln::test::robotmodel::chain_info(model, s.handle()).model_fingerprint) == dynamics.fingerprint);
}

TEST_CASE("trajopt model identity: kiln load --model --gravity loads the plugin under its gravity, refuses another") {
  kiln::test::TempDir dir;
  const auto env = kiln::test::cli_env(dir / "cache");
  auto result = kiln::test::run_kiln({"publish", "--consumer", "tests", "--name", "panda", "--artifact", kPanda}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::vector<std::string> model = {"load", "tests", "panda", "--model", kPandaUrdf, "--base", kBase, "--tip", kTip};
  const auto load = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = model;
    args.insert(args.end(), extra.begin(), extra.end());
    return kiln::test::run_kiln(args, env);
  };
  const Checked dynamics = check_model("--dynamics-check");

  result = load({"--gravity", "0", "0", "-9.81"});
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.out, "model    " + dynamics.fingerprint + " (" + kBase + " -> " + kTip + "): the required one"));

  // Another gravity: refused at the gravity line, both fingerprints named.
  result = load({"--gravity", "0", "0", "-1.62"});
  CHECK(result.exit_code == 4);
  CHECK(contains(result.err, dynamics.fingerprint));
  CHECK(contains(result.err, check_model("--dynamics-check --gravity 0 0 -1.62").fingerprint));
  CHECK(contains(result.err, "gravity 0 0 -9.8100000000000005"));
  CHECK(contains(result.err, "gravity 0 0 -1.6200000000000001"));

  // The kinematic model alone is not this plugin's: refused, told to give the gravity.
  result = load({});
  CHECK(result.exit_code == 4);
  CHECK(contains(result.err, "the plugin has dynamics generated under gravity 0 0 -9.8100000000000005"));

  // A gravity that is not three finite numbers: a usage error before anything loads.
  result = load({"--gravity", "0", "0", "nan"});
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "--gravity"));
  result = kiln::test::run_kiln({"load", "tests", "panda", "--gravity", "0", "0", "-9.81"}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "go with --model URDF"));
}
