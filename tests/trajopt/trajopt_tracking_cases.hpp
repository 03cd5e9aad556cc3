// kiln TrajOpt tests: the cases of interface revision 1.1 that run on the host path and on a device
// alike (tests/trajopt/test_trajopt_tracking.cpp, test_trajopt_gpu.cpp): goals out of reach kept
// within the limits, tracking a reference, the shifted warm start of a receding horizon. Every
// answer is judged in double from the returned trajectory alone.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "trajopt_test_support.hpp"

namespace kiln::test::trajopt {

// Knots 1..N of a minimum-jerk motion from `from` to `to` (N * dof).
inline std::vector<double> minimum_jerk(const float *from, const std::vector<double> &to) {
  const uint32_t D = Dyn::kDof;
  std::vector<double> q(size_t{kN} * D);
  for (uint32_t k = 1; k <= kN; ++k) {
    const double t = static_cast<double>(k) / kN, s = t * t * t * (10 + t * (-15 + 6 * t));
    for (uint32_t j = 0; j < D; ++j) q[(k - 1) * D + j] = from[j] + (to[j] - from[j]) * s;
  }
  return q;
}

// Every problem of b tracks the tip along a minimum-jerk motion from its start to its joint goal.
inline void track_minimum_jerk(Batch &b, float position_weight = 0, float orientation_weight = 0) {
  const uint32_t D = Dyn::kDof;
  for (uint32_t i = 0; i < b.count; ++i) {
    const std::vector<double> goal(b.joint_goals.begin() + i * D, b.joint_goals.begin() + (i + 1) * D);
    kiln_trajopt_common::track_joint_trajectory(kiln_trajopt_common::shared_generated_model<Fk, Dyn>(), b, i,
                                                minimum_jerk(b.q0.data() + i * D, goal), position_weight,
                                                orientation_weight);
  }
}

// The returned trajectory of problem i keeps every limit (judged in double) and says so.
inline void check_kept_within_limits(const Batch &b, uint32_t i) {
  CAPTURE(i);
  const auto j = judge(b, i);
  CHECK(j.starts_at_q0);
  CHECK(b.within_limits[i] == 1);
  CHECK(j.position_violation <= 0);
  CHECK(j.velocity_violation <= 0);
  CHECK(j.torque_violation <= 0);
  CHECK(b.velocity_violation[i] <= 0.0f);
  CHECK(b.torque_violation[i] <= 0.0f);
}

// A pose goal 3 m out (the arm reaches 1.3 m) and a joint goal 4 rad away on joint 0 in 0.32 s (its
// velocity limit, 10 rad/s, allows 3.2 rad): neither converges; both come back within every limit,
// with their goal errors; the reachable problems of the batch converge as before.
inline void check_out_of_reach_within_limits(const Solver &s) {
  Batch b = random_batch(4, 51, Goals::mixed, 0.5, 0.005f);
  b.goal_kinds[0] = KILN_TRAJOPT_GOAL_POSE;
  b.pose_goals[0] = 3.0f;
  b.goal_kinds[1] = KILN_TRAJOPT_GOAL_JOINT;
  b.q0[1 * Dyn::kDof] = -2.0f;
  b.joint_goals[1 * Dyn::kDof] = 2.0f;
  b.options.max_iterations = 40;
  std::fill(b.within_limits.begin(), b.within_limits.end(), uint8_t{7});
  std::string message;
  REQUIRE_MESSAGE(s.solve(b, &message) == KILN_OK, message);
  for (uint32_t i : {0u, 1u}) {
    CAPTURE(i);
    CHECK(b.converged[i] == 0);
    check_kept_within_limits(b, i);
  }
  CHECK(b.position_error[0] > 1.0f);
  CHECK(judge(b, 1).position_error > 0.5);
  for (uint32_t i : {2u, 3u}) {
    CAPTURE(i);
    CHECK(b.converged[i] == 1);
    CHECK(judge(b, i).meets());
    CHECK(b.within_limits[i] == 1);
  }
}

// Tracking the tip along a reachable motion: every knot within 2 mm of its reference (and 0.02 rad
// where orientations are tracked), every limit kept, converged.
inline void check_tracks_reference(const Solver &s, uint32_t count, float orientation_weight) {
  Batch b = random_batch(count, 61, Goals::joint, 0.4);
  track_minimum_jerk(b, orientation_weight != 0 ? 100.0f : 0.0f, orientation_weight);
  b.options.seeds_per_target = 1;
  std::string message;
  REQUIRE_MESSAGE(s.solve(b, &message) == KILN_OK, message);
  for (uint32_t i = 0; i < b.count; ++i) {
    CAPTURE(i);
    const auto j = judge(b, i);
    CHECK(b.converged[i] == 1);
    check_kept_within_limits(b, i);
    CHECK(j.position_error < 2e-3);
    CHECK(j.position_error == doctest::Approx(b.position_error[i]).epsilon(0.05).scale(1e-4));
    if (orientation_weight != 0) CHECK(j.orientation_error < 2e-2);
  }
}

// One tick of a receding horizon: the plan of tick 0 gives tick 1's start (its knot 1) and, advanced
// by one knot, its first guess; tick 1 tracks the same motion one knot later (the last reference
// held). Returns tick 1's iterations per problem.
inline std::vector<uint32_t> next_tick_iterations(const Solver &s, Batch &tick, uint32_t flags) {
  const uint32_t D = Dyn::kDof, N = kN;
  Batch next = tick;
  for (uint32_t i = 0; i < tick.count; ++i) {
    const float *plan = tick.trajectory(i);
    for (uint32_t j = 0; j < D; ++j) {
      next.q0[i * D + j] = plan[D + j];
      next.qd0[i * D + j] = (plan[D + j] - plan[j]) / tick.dt[i];
    }
    for (uint32_t k = 0; k + 1 < N; ++k)
      for (int a = 0; a < 7; ++a) next.track_poses[(i * N + k) * 7 + a] = tick.track_poses[(i * N + k + 1) * 7 + a];
  }
  next.options.flags = flags;
  next.point();
  std::string message;
  REQUIRE_MESSAGE(s.solve(next, &message) == KILN_OK, message);
  std::vector<uint32_t> iterations;
  for (uint32_t i = 0; i < next.count; ++i) {
    CAPTURE(i);
    CHECK(next.converged[i] == 1);
    check_kept_within_limits(next, i);
    CHECK(judge(next, i).position_error < 2e-3);
    iterations.push_back(next.iterations[i]);
  }
  return iterations;
}

// The shifted warm start needs fewer steps than a cold start of the same tick.
inline void check_shifted_warm_start(const Solver &warm, const Solver &cold, uint32_t count) {
  Batch b = random_batch(count, 62, Goals::joint, 0.4);
  track_minimum_jerk(b);
  b.options.seeds_per_target = 1;
  std::string message;
  REQUIRE_MESSAGE(warm.solve(b, &message) == KILN_OK, message);
  const std::vector<uint32_t> shifted = next_tick_iterations(warm, b, KILN_TRAJOPT_SOLVE_WARM_SHIFT);
  const std::vector<uint32_t> cold_start = next_tick_iterations(cold, b, 0);
  uint32_t shifted_total = 0, cold_total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    CAPTURE(i);
    CHECK(shifted[i] <= 3);
    shifted_total += shifted[i], cold_total += cold_start[i];
  }
  MESSAGE("next tick: " << shifted_total << " steps from the shifted plan, " << cold_total << " from a cold start");
  CHECK(shifted_total < cold_total);
}

}  // namespace kiln::test::trajopt
