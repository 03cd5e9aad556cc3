// kiln TrajOpt plugin: the self-test of "kiln.selftest/1" (abi/kiln/ext/selftest.h), host code.
//
// Up to three problems with fixed numbers (two joint goals and one pose goal, the pose the double
// FK of a fixed joint vector), solved through the caller's solve path (solve_async + wait, on the
// device when activated on one). Each must converge, start at its q_0, and its answer judged in
// double must meet the goal (tolerance plus float slack) and every limit: the velocities from the
// returned positions, the torques from the generated RNEA in double at the returned knots.
#pragma once

#include <stdint.h>

#include <cmath>
#include <vector>

#include "kiln/ext/trajopt.h"
#include "kiln/plugin.hpp"
#include "trajopt_model.cuh"

namespace kiln_trajopt {
namespace selftest {

constexpr uint32_t kProblems = 3;
constexpr double kPositionSlack = 2e-5, kOrientationSlack = 2e-4;  // the double answer vs the float solver
constexpr double kTorqueSlack = 1e-3;                              // relative to the effort limit

inline void configuration(uint32_t k, double shift, double *q) {
  for (int j = 0; j < kDof; ++j) {
    const double u = 0.5 + 0.25 * std::sin(1.7 * (k + 1) + 2.3 * (j + 1)) + shift * std::cos(0.9 * (k + 1) + j);
    q[j] = Dyn::kLower[j] + u * (Dyn::kUpper[j] - Dyn::kLower[j]);
  }
}

// Rotation angle between two row-major rotation matrices.
inline double angle_between(const double *A, const double *B) {
  double trace = 0;
  for (int i = 0; i < 9; ++i) trace += A[i] * B[i];  // trace(A^T B)
  return std::acos(std::fmax(-1.0, std::fmin(1.0, (trace - 1) / 2)));
}

template <class Solve>
kiln_status run(uint32_t max_batch, Solve &&solve, kiln::plugin::Message &message) {
  const uint32_t n = max_batch < kProblems ? max_batch : kProblems;
  if (n == 0) {
    message.set("selftest: max_batch is 0, so no problem can be solved");
    return KILN_ERR_STATE;
  }
  std::vector<float> q0(n * kDof), joint(n * kDof), pose(n * 7);
  std::vector<uint8_t> kinds(n);
  std::vector<double> pose_R(n * 9), pose_p(n * 3);
  for (uint32_t i = 0; i < n; ++i) {
    double a[kDof], b[kDof], p[3], R[9];
    configuration(i, 0.0, a);
    configuration(i, 0.06, b);
    Fk::fk(b, p, R);
    double E[9] = {};
    for (int k = 0; k < 9; ++k) pose_R[i * 9 + k] = R[k], E[k] = R[k];
    double e[3];
    rotation_vector(E, e);  // axis * angle -> quaternion
    const double angle = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), s = angle > 1e-12 ? std::sin(angle / 2) / angle : 0.5;
    const double quat[4] = {std::cos(angle / 2), e[0] * s, e[1] * s, e[2] * s};
    for (int k = 0; k < 3; ++k) pose[i * 7 + k] = static_cast<float>(p[k]), pose_p[i * 3 + k] = p[k];
    for (int k = 0; k < 4; ++k) pose[i * 7 + 3 + k] = static_cast<float>(quat[k]);
    for (int j = 0; j < kDof; ++j) q0[i * kDof + j] = static_cast<float>(a[j]), joint[i * kDof + j] = static_cast<float>(b[j]);
    kinds[i] = i == 2 ? KILN_TRAJOPT_GOAL_POSE : KILN_TRAJOPT_GOAL_JOINT;
  }
  kiln_trajopt_options options{};
  options.struct_size = sizeof options;
  options.random_seed = 0x6b696c6e73656c66ull;
  kiln_trajopt_problem problem{};
  problem.struct_size = sizeof problem;
  problem.count = n;
  problem.q0 = q0.data(), problem.goal_kinds = kinds.data(), problem.pose_goals = pose.data();
  problem.joint_goals = joint.data(), problem.options = &options;
  std::vector<float> q(size_t{n} * kKnots * kDof), pe(n), tv(n), vv(n);
  std::vector<uint8_t> converged(n);
  kiln_trajopt_result result{};
  result.struct_size = sizeof result;
  result.q = q.data(), result.converged = converged.data(), result.position_error = pe.data();
  result.velocity_violation = vv.data(), result.torque_violation = tv.data();
  kiln_status status = solve(problem, result, message);
  if (status != KILN_OK) return status;
  const double dt = KILN_TRAJOPT_DEFAULT_DT;
  for (uint32_t i = 0; i < n; ++i) {
    const float *traj = q.data() + size_t{i} * kKnots * kDof;
    if (!converged[i]) {
      message.format("selftest: problem %u (%s goal) did not converge (position error %g)", i,
                     kinds[i] ? "joint" : "pose", static_cast<double>(pe[i]));
      return KILN_ERR_INTERNAL;
    }
    for (int j = 0; j < kDof; ++j) {
      if (traj[j] != q0[i * kDof + j]) {
        message.format("selftest: problem %u: knot 0 joint %d is %g, the start is %g", i, j, static_cast<double>(traj[j]),
                       static_cast<double>(q0[i * kDof + j]));
        return KILN_ERR_INTERNAL;
      }
    }
    double last[kDof];
    for (int j = 0; j < kDof; ++j) last[j] = traj[kN * kDof + j];
    double position = 0, orientation = 0;
    if (kinds[i] == KILN_TRAJOPT_GOAL_JOINT) {
      for (int j = 0; j < kDof; ++j) position = std::fmax(position, std::fabs(last[j] - joint[i * kDof + j]));
    } else {
      double p[3], R[9];
      Fk::fk(last, p, R);
      for (int k = 0; k < 3; ++k) position += (p[k] - pose_p[i * 3 + k]) * (p[k] - pose_p[i * 3 + k]);
      position = std::sqrt(position);
      orientation = angle_between(R, &pose_R[i * 9]);
    }
    if (position > KILN_TRAJOPT_DEFAULT_POSITION_TOLERANCE + kPositionSlack ||
        orientation > KILN_TRAJOPT_DEFAULT_ORIENTATION_TOLERANCE + kOrientationSlack) {
      message.format("selftest: problem %u: the answer misses its goal by %g (m or rad) and %g rad, judged in double", i,
                     position, orientation);
      return KILN_ERR_INTERNAL;
    }
    for (int k = 0; k <= kN; ++k) {
      double qk[kDof], qd[kDof], qdd[kDof], tau[kDof];
      for (int j = 0; j < kDof; ++j) {
        const double here = traj[k * kDof + j], prev = k > 0 ? traj[(k - 1) * kDof + j] : here;
        const double next = k < kN ? traj[(k + 1) * kDof + j] : here;
        qk[j] = here, qd[j] = (here - prev) / dt, qdd[j] = k < kN ? (next - 2 * here + prev) / (dt * dt) : 0.0;
      }
      Dyn::rnea(qk, qd, qdd, tau);
      for (int j = 0; j < kDof; ++j) {
        const bool outside = (Dyn::kPositionLimited[j] && (qk[j] < Dyn::kLower[j] || qk[j] > Dyn::kUpper[j])) ||
                             (Dyn::kVelocityLimit[j] > 0 && std::fabs(qd[j]) > Dyn::kVelocityLimit[j] * (1 + 1e-4)) ||
                             (Dyn::kEffortLimit[j] > 0 && std::fabs(tau[j]) > Dyn::kEffortLimit[j] * (1 + kTorqueSlack));
        if (outside) {
          message.format("selftest: problem %u knot %d joint %d: q %g, qd %g, tau %g (double) breaks a limit", i, k, j,
                         qk[j], qd[j], tau[j]);
          return KILN_ERR_INTERNAL;
        }
      }
    }
    if (vv[i] > 0 || tv[i] > 0) {
      message.format("selftest: problem %u reports limit violations (velocity %g, torque %g) while converged", i,
                     static_cast<double>(vv[i]), static_cast<double>(tv[i]));
      return KILN_ERR_INTERNAL;
    }
  }
  return KILN_OK;
}

}  // namespace selftest
}  // namespace kiln_trajopt
