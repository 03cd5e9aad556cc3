// kiln TrajOpt tests: "kiln.robotmodel/1" (abi/kiln/ext/robotmodel.h) of the TrajOpt plugins (iiwa14 and
// Panda, N = 64), without activate and without a device: the chain as kiln.trajopt/1 describes it, fk
// against the chain's own description, rnea as the generated RNEA in double and as the torques a solve
// reports, bad arguments refused; and a Panda trajectory judged with the plugin's own model (what
// kiln-trajopt-demo does), where the iiwa14's model would judge it wrongly. The "gpu" suite: the same on
// the device, with the model asked while a device solve is in flight.
// This translation unit includes the Panda's generated headers (trajopt_test_support.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <kiln/ext/robotmodel.h>

#include "kiln_trajopt_model.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/robotmodel_checks.hpp"
#include "trajopt_test_support.hpp"

namespace {

using namespace kiln::test::trajopt;
using namespace kiln::test::robotmodel;

const std::string kPanda = plugin_file("KILN_TRAJOPT_PLUGIN_PANDA", KILN_TRAJOPT_PLUGIN_PANDA);
const std::string kIiwa14 = plugin_file("KILN_TRAJOPT_PLUGIN_IIWA14", KILN_TRAJOPT_PLUGIN_IIWA14);

const kiln_robotmodel_v1 *model_of(const Solver &s) {
  const auto *table = s.instance->interface<kiln_robotmodel_v1>(KILN_ROBOTMODEL_INTERFACE_ID);
  REQUIRE(table != nullptr);
  return table;
}

// count random states (q within the limits, |qd| up to the velocity limits, |qdd| up to 10 rad/s^2).
void random_states(const std::vector<kiln_robotmodel_joint> &js, uint32_t count, uint64_t seed, std::vector<double> &q,
                   std::vector<double> &qd, std::vector<double> &qdd) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  q.clear(), qd.clear(), qdd.clear();
  for (uint32_t i = 0; i < count; ++i) {
    for (const kiln_robotmodel_joint &j : js) {
      q.push_back((j.lower + j.upper) / 2 + (j.upper - j.lower) / 2 * u(rng));
      qd.push_back(j.velocity_limit * u(rng));
      qdd.push_back(10.0 * u(rng));
    }
  }
}

}  // namespace

TEST_CASE("trajopt robotmodel: the plugins describe the chain kiln.trajopt/1 solves for, with dynamics") {
  for (const std::string &file : {kIiwa14, kPanda}) {
    CAPTURE(file);
    Solver s(file, -1, std::nullopt);  // never activated
    const kiln_robotmodel_v1 *model = model_of(s);
    kiln_trajopt_info info{};
    info.struct_size = sizeof info;
    REQUIRE(s.api->info(s.handle(), &info) == KILN_OK);
    const kiln_robotmodel_chain_info chain = chain_info(model, s.handle());
    CHECK(chain.dof == info.dof);
    CHECK(std::string(chain.robot) == info.robot);
    CHECK(std::string(chain.base_link) == info.base_link);
    CHECK(std::string(chain.tip_link) == info.tip_link);
    CHECK(std::string(chain.source) == info.source);
    CHECK(chain.has_rnea == 1);
    CHECK((chain.gravity[0] == 0.0 && chain.gravity[1] == 0.0 && chain.gravity[2] == -9.81));
    const std::vector<kiln_robotmodel_joint> js = joints(model, s.handle());
    for (uint32_t j = 0; j < info.dof; ++j) {
      CAPTURE(j);
      // kiln.trajopt/1 reads the limits from the dynamics header, kiln.robotmodel/1 from the FK header.
      kiln_trajopt_joint_info expected{};
      expected.struct_size = sizeof expected;
      REQUIRE(s.api->joint_info(s.handle(), j, &expected) == KILN_OK);
      CHECK(std::string(js[j].name) == expected.name);
      CHECK(js[j].type == expected.type);
      CHECK(js[j].lower == expected.lower);
      CHECK(js[j].upper == expected.upper);
      CHECK(js[j].velocity_limit == expected.velocity_limit);
      CHECK(js[j].effort_limit == expected.effort_limit);
      CHECK(js[j].position_limited == expected.position_limited);
    }
    check_fk_matches_description(model, s.handle(), 3);
  }
}

TEST_CASE("trajopt robotmodel: rnea is the generated RNEA of the plugin's own chain, in double") {
  Solver panda(kPanda, -1, std::nullopt), iiwa14(kIiwa14, -1, std::nullopt);
  const kiln_robotmodel_v1 *model = model_of(panda);
  const std::vector<kiln_robotmodel_joint> js = joints(model, panda.handle());
  const uint32_t count = 500, D = Dyn::kDof;
  std::vector<double> q, qd, qdd;
  random_states(js, count, 5, q, qd, qdd);
  std::vector<double> tau(q.size()), other(q.size());
  char message[256] = "";
  REQUIRE_MESSAGE(model->rnea(panda.handle(), q.data(), qd.data(), qdd.data(), count, tau.data(), message,
                              sizeof message) == KILN_OK,
                  message);
  double worst = 0, largest = 0;
  for (uint32_t i = 0; i < count; ++i) {
    double expected[Dyn::kDof];
    Dyn::rnea(q.data() + i * D, qd.data() + i * D, qdd.data() + i * D, expected);  // the Panda's header
    for (uint32_t a = 0; a < D; ++a) {
      worst = std::max(worst, std::fabs(tau[i * D + a] - expected[a]));
      largest = std::max(largest, std::fabs(expected[a]));
    }
  }
  MESSAGE("Panda plugin rnea vs the generated header: worst " << worst << " N m, largest |tau| " << largest);
  CHECK(largest > 10.0);   // the states exercise the dynamics
  CHECK(worst < 1e-9);
  // The iiwa14 plugin's model is another robot's: the same states give other torques.
  REQUIRE(model_of(iiwa14)->rnea(iiwa14.handle(), q.data(), qd.data(), qdd.data(), count, other.data(), nullptr, 0) ==
          KILN_OK);
  double apart = 0;
  for (size_t k = 0; k < tau.size(); ++k) apart = std::max(apart, std::fabs(tau[k] - other[k]));
  CHECK(apart > 1.0);
}

TEST_CASE("trajopt robotmodel: a Panda trajectory is judged with the plugin's own model, its torques are the model's") {
  Solver panda(kPanda, -1, 3u), iiwa14(kIiwa14, -1, std::nullopt);
  const kiln_trajopt_common::Model own = kiln_trajopt_common::plugin_model(model_of(panda), panda.handle());
  const kiln_trajopt_common::Model wrong = kiln_trajopt_common::plugin_model(model_of(iiwa14), iiwa14.handle());
  CHECK(own.robot == "panda");
  CHECK(wrong.robot != own.robot);
  CHECK(own.description.find("kiln.robotmodel/1: panda") != std::string::npos);
  // Problems drawn from the plugin's own model, as kiln-trajopt-demo draws them.
  Batch b(own.dof, kN, 3);
  kiln_trajopt_common::random_problems(own, b, 2024, 0.5, 0.02f, Goals::pose);
  std::string message;
  REQUIRE_MESSAGE(panda.solve(b, &message) == KILN_OK, message);
  uint32_t good_own = 0, good_wrong = 0;
  double torque_gap = 0, largest = 0;
  for (uint32_t i = 0; i < b.count; ++i) {
    CAPTURE(i);
    const auto judged = kiln_trajopt_common::judge(own, b, i, b.trajectory(i));
    const auto compiled = judge(b, i);  // this translation unit's Panda headers: the same model
    CHECK(std::fabs(judged.position_error - compiled.position_error) < 1e-12);
    CHECK(std::fabs(judged.torque_violation - compiled.torque_violation) < 1e-9);
    good_own += judged.meets() ? 1 : 0;
    good_wrong += kiln_trajopt_common::judge(wrong, b, i, b.trajectory(i)).meets() ? 1 : 0;
    // The torques the solve reported (float, from its own RNEA) against the model's, in double.
    const size_t knots = kN + 1, D = own.dof;
    std::vector<double> q(b.trajectory(i), b.trajectory(i) + knots * D), qd(knots * D), qdd(knots * D), tau(knots * D);
    for (size_t k = 0; k < knots; ++k) {
      for (size_t a = 0; a < D; ++a) {
        const double here = q[k * D + a], prev = k > 0 ? q[(k - 1) * D + a] : here;
        qd[k * D + a] = k > 0 ? (here - prev) / b.dt[i] : b.qd0[i * D + a];
      }
    }
    for (size_t k = 0; k < knots; ++k)
      for (size_t a = 0; a < D; ++a) qdd[k * D + a] = k + 1 < knots ? (qd[(k + 1) * D + a] - qd[k * D + a]) / b.dt[i] : 0.0;
    own.rnea(q.data(), qd.data(), qdd.data(), static_cast<uint32_t>(knots), tau.data());
    const float *reported = b.torques.data() + size_t{i} * knots * D;
    for (size_t k = 0; k < knots * D; ++k) {
      torque_gap = std::max(torque_gap, std::fabs(tau[k] - reported[k]));
      largest = std::max(largest, std::fabs(tau[k]));
    }
  }
  MESSAGE("reported torques vs the model's rnea: worst " << torque_gap << " N m of " << largest);
  CHECK(good_own == b.count);  // the plugin's own model: every trajectory meets the goal and the limits
  CHECK(good_wrong < b.count);  // the iiwa14's model judges the same trajectories wrongly
  CHECK(torque_gap < 1e-3 * std::max(1.0, largest));
}

TEST_CASE("trajopt robotmodel: bad arguments are typed errors naming the argument, never a crash") {
  Solver s(kPanda, -1, std::nullopt);
  check_bad_inputs(model_of(s), s.handle(), /*has_rnea=*/true);
}

TEST_SUITE("gpu") {
  TEST_CASE("trajopt robotmodel gpu: the Panda plugin's model answers during a device solve and judges its trajectories" *
            kiln::test::skip_if(kiln::test::no_gpu)) {
    Solver panda(kPanda, 0, 64u, std::nullopt);
    const kiln_robotmodel_v1 *table = model_of(panda);
    const kiln_trajopt_common::Model own = kiln_trajopt_common::plugin_model(table, panda.handle());
    Batch b(own.dof, kN, 64);
    kiln_trajopt_common::random_problems(own, b, 84, 0.5, 0.02f, Goals::pose);
    char message[512] = "";
    REQUIRE_MESSAGE(panda.api->solve_async(panda.handle(), &b.problem, &b.result, message, sizeof message) == KILN_OK,
                    message);
    // [any-thread]: fk and rnea while the solve is in flight, on this thread (the control thread's).
    const std::vector<double> zero(own.dof, 0.0);
    double pose[KILN_ROBOTMODEL_POSE_SIZE];
    std::vector<double> tau(own.dof);
    CHECK(table->fk(panda.handle(), zero.data(), 1, pose, message, sizeof message) == KILN_OK);
    CHECK(table->rnea(panda.handle(), zero.data(), zero.data(), zero.data(), 1, tau.data(), message, sizeof message) ==
          KILN_OK);
    REQUIRE_MESSAGE(panda.api->wait(panda.handle(), message, sizeof message) == KILN_OK, message);
    CHECK(std::fabs(pose[0] - 0.088) < 1e-12);  // the Panda's published tip at q = 0
    CHECK(std::fabs(pose[2] - 0.821) < 1e-12);
    uint32_t good = 0;
    for (uint32_t i = 0; i < b.count; ++i) {
      const auto judged = kiln_trajopt_common::judge(own, b, i, b.trajectory(i));
      CHECK(std::fabs(judged.position_error - judge(b, i).position_error) < 1e-12);  // = this unit's Panda headers
      good += judged.meets() ? 1 : 0;
    }
    MESSAGE("64 Panda problems on the device, judged with the plugin's own model: " << good << " good");
    CHECK(good == b.count);
  }
}
