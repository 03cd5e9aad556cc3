// kiln TrajOpt tests: the robot model in a plugin with dynamics. Its generated headers carry the
// model with the gravity the dynamics apply, so the fingerprint kiln records is that of the URDF,
// the chain, the generators and the gravity: kiln-urdf-fk --check --dynamics-check prints it, the
// kinematic model (--check alone) is another, and kiln load --model ... --gravity X Y Z loads the
// plugin under its own gravity and refuses (exit 4) it under another, naming the gravity line.
// And the dynamics probe: the plugin's rnea against the host's torques.
// This translation unit includes the Panda's generated headers (trajopt_test_support.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <kiln/dynamics.hpp>
#include <kiln/errors.hpp>
#include <kiln/ext/robotmodel.h>
#include <kiln/identity.hpp>

#include "artifact/model_record.hpp"
#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/model_check.hpp"
#include "support/robotmodel_checks.hpp"
#include "trajopt_test_support.hpp"

namespace {

namespace fs = boost::filesystem;
using kiln::test::contains;
using namespace kiln::test::trajopt;

const std::string kPanda = plugin_file("KILN_TRAJOPT_PLUGIN_PANDA", KILN_TRAJOPT_PLUGIN_PANDA);
const std::string kIiwa14 = plugin_file("KILN_TRAJOPT_PLUGIN_IIWA14", KILN_TRAJOPT_PLUGIN_IIWA14);
const std::string kPandaUrdf = std::string(KILN_TRAJOPT_ROBOTS_DIR) + "/panda.urdf";
const std::string kBase = "panda_link0", kTip = "panda_grasptarget";

// kiln-urdf-fk --check on the Panda's chain with `options`: its fingerprint and canonical text.
kiln::test::CheckedModel check_model(const std::string &options) {
  return kiln::test::check_model(KILN_URDF_FK_PATH, kPandaUrdf, kBase, kTip, options);
}

}  // namespace

TEST_CASE("trajopt model identity: the plugin's model includes the gravity its dynamics apply") {
  const kiln::test::CheckedModel dynamics = check_model("--dynamics-check");
  const kiln::test::CheckedModel kinematic = check_model("");
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
  const kiln::test::CheckedModel dynamics = check_model("--dynamics-check");

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

// The dynamics probe (kiln/dynamics.hpp): the plugin's rnea at states the host chooses against
// the host's own torques -- here the Panda's generated RNEA in double, which the robotgen tests
// hold to KDL. What a host with its own dynamics (KDL, Pinocchio) does before trusting a plugin.
TEST_CASE("trajopt model identity: a dynamics probe passes the plugin of the host's model and refuses another") {
  const auto states_of = [](uint64_t seed, int count) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<kiln::DynamicsState> states(count);
    for (auto &state : states) {
      for (int j = 0; j < Dyn::kDof; ++j) {
        state.q.push_back(0.5 * (Fk::kLower[j] + Fk::kUpper[j]) + 0.5 * (Fk::kUpper[j] - Fk::kLower[j]) * u(rng));
        state.qd.push_back(u(rng));
        state.qdd.push_back(5.0 * u(rng));
      }
      state.tau.resize(Dyn::kDof);
      Dyn::rnea(state.q.data(), state.qd.data(), state.qdd.data(), state.tau.data());
    }
    return states;
  };
  const std::vector<kiln::DynamicsState> panda = states_of(7, 8);

  Solver s(kPanda, -1, std::nullopt);  // never activated: the probe runs on the host
  const kiln::DynamicsProbeReport report = kiln::probe_dynamics(*s.plugin.module, *s.instance, panda);
  CHECK(report.states == 8);
  CHECK(report.worst_difference < 1e-9);

  // One joint's torque off by 1 %, as an inertia or a mass from another URDF would make it.
  std::vector<kiln::DynamicsState> heavier = panda;
  heavier[5].tau[3] *= 1.01;
  try {
    kiln::probe_dynamics(*s.plugin.module, *s.instance, heavier);
    FAIL("a torque 1 % off was accepted");
  } catch (const kiln::IncompatibleError &error) {
    const std::string message = error.what();
    CHECK(contains(message, "state 5, joint panda_joint4"));
    CHECK(contains(message, "regenerate it from this robot's URDF"));
    REQUIRE(error.reasons().size() == 1);
    CHECK(error.reasons()[0].field == "dynamics");
  }
  // The iiwa14's plugin probed with the Panda's torques (both have 7 joints): refused.
  Solver iiwa(kIiwa14, -1, std::nullopt);
  CHECK_THROWS_WITH_AS(kiln::probe_dynamics(*iiwa.plugin.module, *iiwa.instance, panda),
                       doctest::Contains("the plugin's torque differs from the host model's"), kiln::IncompatibleError);
  // A looser tolerance is the host's to choose: 2 % lets the 1 % through.
  kiln::DynamicsProbeOptions loose;
  loose.relative = 0.02;
  CHECK(kiln::probe_dynamics(*s.plugin.module, *s.instance, heavier, loose).worst_state == 5);

  // The host's mistakes are usage errors, before the plugin runs.
  std::vector<kiln::DynamicsState> short_state = panda;
  short_state[2].qd.pop_back();
  CHECK_THROWS_WITH_AS(kiln::probe_dynamics(*s.plugin.module, *s.instance, short_state),
                       doctest::Contains("state 2 has a vector of 6 values; the plugin's chain has 7 joints"),
                       kiln::UsageError);
  std::vector<kiln::DynamicsState> nan_state = panda;
  nan_state[0].q[0] = std::nan("");
  CHECK_THROWS_AS(kiln::probe_dynamics(*s.plugin.module, *s.instance, nan_state), kiln::UsageError);
  CHECK_THROWS_AS(kiln::probe_dynamics(*s.plugin.module, *s.instance, {}), kiln::UsageError);

  // The same through kiln load --dynamics-probe FILE: exit 4 naming the joint, 2 for a bad file.
  kiln::test::TempDir dir;
  const auto env = kiln::test::cli_env(dir / "cache");
  auto result = kiln::test::run_kiln({"publish", "--consumer", "tests", "--name", "panda", "--artifact", kPanda}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const auto probe_file = [&](const std::string &name, const std::vector<kiln::DynamicsState> &states) {
    nlohmann::json file = {{"states", nlohmann::json::array()}};
    for (const auto &state : states) {
      file["states"].push_back({{"q", state.q}, {"qd", state.qd}, {"qdd", state.qdd}, {"tau", state.tau}});
    }
    kiln::test::write_text(dir / name, file.dump());
    return (dir / name).string();
  };
  result = kiln::test::run_kiln({"load", "tests", "panda", "--dynamics-probe", probe_file("panda.json", panda)}, env);
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.out, "dynamics 8 states agree with"));
  result = kiln::test::run_kiln({"load", "tests", "panda", "--dynamics-probe", probe_file("heavier.json", heavier)}, env);
  CHECK(result.exit_code == 4);
  CHECK(contains(result.err, "state 5, joint panda_joint4"));
  kiln::test::write_text(dir / "broken.json", "{\"states\": [{\"q\": [1, \"x\"]}]}");
  result = kiln::test::run_kiln({"load", "tests", "panda", "--dynamics-probe", (dir / "broken.json").string()}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "broken.json: state 0's \"q\" holds something other than a number"));
}
