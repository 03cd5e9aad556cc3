// kiln TrajOpt tests on the host path (activate(-1)) of the iiwa14 N=64 plugin: goals and limits
// judged in double, agreement with the CPU reference, warm start (a slot's last solution, and the
// same carried to a new instance by export_state / import_state), the self-test, an unreachable goal.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "trajopt_test_support.hpp"

namespace {

using namespace kiln::test::trajopt;

const std::string kPlugin = plugin_file("KILN_TRAJOPT_PLUGIN_IIWA14", KILN_TRAJOPT_PLUGIN_IIWA14);

void check_all_meet(const Batch &b) {
  for (uint32_t i = 0; i < b.count; ++i) {
    CAPTURE(i);
    const auto j = judge(b, i);
    CHECK(b.converged[i] == 1);
    CHECK(j.meets());
    CHECK(j.position_error == doctest::Approx(b.position_error[i]).epsilon(0.05).scale(1e-4));
    CHECK(b.velocity_violation[i] <= 0.0f);
    CHECK(b.torque_violation[i] <= 0.0f);
    CHECK(b.position_violation[i] <= 0.0f);
    CHECK(b.iterations[i] >= 1);
  }
}

}  // namespace

TEST_CASE("trajopt iiwa14: info and joint limits come from the generated dynamics header, without activate") {
  Solver s(kPlugin, -1, std::nullopt);
  kiln_trajopt_info info{};
  info.struct_size = sizeof info;
  REQUIRE(s.api->info(s.handle(), &info) == KILN_OK);
  CHECK(info.dof == 7);
  CHECK(info.horizon == kN);
  CHECK(info.active == 0);
  CHECK(std::string(info.robot) == Dyn::kRobot);
  CHECK(std::string(info.tip_link) == "lbr_iiwa_link_7");
  CHECK(info.solve_flags == (KILN_TRAJOPT_SOLVE_WARM_START | KILN_TRAJOPT_SOLVE_WARM_SHIFT));
  for (uint32_t j = 0; j < info.dof; ++j) {
    kiln_trajopt_joint_info joint{};
    joint.struct_size = sizeof joint;
    REQUIRE(s.api->joint_info(s.handle(), j, &joint) == KILN_OK);
    CHECK(joint.lower == Dyn::kLower[j]);
    CHECK(joint.velocity_limit == Dyn::kVelocityLimit[j]);
    CHECK(joint.effort_limit == Dyn::kEffortLimit[j]);
    CHECK(std::string(joint.name) == Dyn::kJointNames[j]);
  }
  kiln_trajopt_joint_info joint{};
  joint.struct_size = sizeof joint;
  CHECK(s.api->joint_info(s.handle(), info.dof, &joint) == KILN_ERR_INVALID_ARGUMENT);
}

TEST_CASE("trajopt iiwa14 host path: pose goals and joint goals meet the tolerances and every limit") {
  Solver s(kPlugin, -1, 8u);
  Batch pose = random_batch(6, 11, Goals::pose);
  REQUIRE(s.solve(pose) == KILN_OK);
  check_all_meet(pose);
  Batch joint = random_batch(4, 12, Goals::joint);
  REQUIRE(s.solve(joint) == KILN_OK);
  check_all_meet(joint);
  for (uint32_t i = 0; i < joint.count; ++i) CHECK(joint.orientation_error[i] == 0.0f);
  // The reported knots are consistent: qd by the interface's differences, knot 0 the start.
  for (uint32_t k = 1; k <= kN; ++k)
    for (int a = 0; a < 7; ++a) {
      const float *q = joint.trajectory(0);
      CHECK(joint.qd[k * 7 + a] == doctest::Approx((q[k * 7 + a] - q[(k - 1) * 7 + a]) / 0.02f).epsilon(1e-3).scale(1e-3));
    }
}

TEST_CASE("trajopt iiwa14 host path: agrees with the CPU reference on the same problems and stopping rule") {
  Solver s(kPlugin, -1, 6u);
  Batch b = random_batch(6, 21, Goals::mixed);
  REQUIRE(s.solve(b) == KILN_OK);
  Reference reference;
  kiln_trajopt_ref::Options options;
  for (uint32_t i = 0; i < b.count; ++i) {
    CAPTURE(i);
    const auto r = reference.solve(kiln_trajopt_common::reference_problem<Reference>(b, i), i, options);
    CHECK(r.converged);
    CHECK(b.converged[i] == 1);
    // float (plugin) and double (reference) end near the same optimum: cost within 5 %, every knot within 0.02 rad.
    CHECK(b.cost[i] == doctest::Approx(r.cost).epsilon(0.05));
    double worst = 0;
    const float *q = b.trajectory(i);
    for (uint32_t k = 0; k <= kN; ++k)
      for (int a = 0; a < 7; ++a) worst = std::max(worst, std::fabs(q[k * 7 + a] - r.q(k, a)));
    CHECK(worst < 0.02);
  }
}

TEST_CASE("trajopt iiwa14 host path: warm start from the slots' last solutions takes fewer iterations") {
  Solver s(kPlugin, -1, 4u);
  Batch b = random_batch(4, 31, Goals::pose);
  REQUIRE(s.solve(b) == KILN_OK);
  const std::vector<uint32_t> cold = b.iterations;
  // The goals move a little (the tip pose of the joint goal moved 0.01 rad: reachable): a replanning cycle.
  for (float &q : b.joint_goals) q += 0.01f;
  kiln_trajopt_common::pose_goals_from_joint_goals<Fk>(b);
  b.options.flags = KILN_TRAJOPT_SOLVE_WARM_START;
  REQUIRE(s.solve(b) == KILN_OK);
  check_all_meet(b);
  uint32_t warm_total = 0, cold_total = 0;
  for (uint32_t i = 0; i < b.count; ++i) warm_total += b.iterations[i], cold_total += cold[i];
  CHECK(warm_total < cold_total);

  // The same state carried to a fresh instance (a hot swap): it starts where the first left off.
  const std::vector<unsigned char> blob = s.export_state();
  Solver next(kPlugin, -1, 4u);
  std::string message;
  REQUIRE_MESSAGE(next.import_state(blob, &message) == KILN_OK, message);
  Batch again = b;
  again.point();
  REQUIRE(next.solve(again) == KILN_OK);
  uint32_t imported = 0;
  for (uint32_t i = 0; i < again.count; ++i) imported += again.iterations[i];
  CHECK(imported <= warm_total);
  CHECK(imported < cold_total);
  // Without the flag the slots are not used: as many iterations as cold.
  Solver plain(kPlugin, -1, 4u);
  REQUIRE(plain.import_state(blob, &message) == KILN_OK);
  Batch fresh = random_batch(4, 31, Goals::pose);
  REQUIRE(plain.solve(fresh) == KILN_OK);
  CHECK(fresh.iterations == cold);
}

TEST_CASE("trajopt iiwa14 host path: initial_trajectories seed the solve (a converged plan re-solves in one step)") {
  Solver s(kPlugin, -1, 2u);
  Batch b = random_batch(2, 41, Goals::joint);
  REQUIRE(s.solve(b) == KILN_OK);
  std::vector<float> initial(size_t{b.count} * kN * 7);
  for (uint32_t i = 0; i < b.count; ++i)
    std::copy(b.trajectory(i) + 7, b.trajectory(i) + (kN + 1) * 7, initial.begin() + size_t{i} * kN * 7);
  b.problem.initial_trajectories = initial.data();
  REQUIRE(s.solve(b) == KILN_OK);
  for (uint32_t i = 0; i < b.count; ++i) {
    CHECK(b.converged[i] == 1);
    CHECK(b.iterations[i] <= 2);
  }
}

TEST_CASE("trajopt iiwa14 host path: an unreachable goal is reported not converged, with its error") {
  Solver s(kPlugin, -1, 2u);
  Batch b = random_batch(2, 51, Goals::pose);
  b.pose_goals[0] = 3.0f;  // 3 m out: beyond the arm's 1.3 m reach
  b.options.max_iterations = 20;
  REQUIRE(s.solve(b) == KILN_OK);
  CHECK(b.converged[0] == 0);
  CHECK(b.position_error[0] > 1.0f);
  CHECK(std::isfinite(b.cost[0]));
  CHECK(judge(b, 0).position_violation <= 0);  // still within the position limits
  CHECK(b.converged[1] == 1);  // the other problem of the batch is unaffected
}

TEST_CASE("trajopt iiwa14 host path: the self-test passes within its budget") {
  Solver s(kPlugin, -1, 4u);
  std::string message;
  const auto start = std::chrono::steady_clock::now();
  CHECK_MESSAGE(s.selftest(&message) == KILN_OK, message);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("self-test on the host path: " << ms << " ms");
  CHECK(ms < 1000);  // about 100 ms is the interface's budget; a debug build on a loaded CI machine is slower
}
