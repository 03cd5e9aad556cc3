// kiln TrajOpt: judging a returned trajectory without trusting what the solver reported: the goal
// error from the generated FK in double at the returned q_N, and every limit from the returned
// positions (velocities by the interface's finite differences, torques by the generated RNEA in
// double), against the URDF's limits.
#pragma once

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kiln_trajopt_batch.hpp"

namespace kiln_trajopt_common {

struct Judged {
  double position_error = 0, orientation_error = 0;  // m (joint goals: rad, max over joints), rad
  double position_violation = 0, velocity_violation = 0, torque_violation = 0;
  bool starts_at_q0 = true;
  bool meets(double position_tolerance = 1e-3, double orientation_tolerance = 1e-2) const {
    return starts_at_q0 && position_error <= position_tolerance && orientation_error <= orientation_tolerance &&
           position_violation <= 0 && velocity_violation <= 0 && torque_violation <= 0;
  }
};

// Trajectory traj ((N + 1) x dof, knot 0 the start) of problem i of b.
template <class Fk, class Dyn>
Judged judge(const HostBatch &b, uint32_t i, const float *traj) {
  constexpr int D = Dyn::kDof;
  const int N = static_cast<int>(b.horizon);
  const double dt = b.dt[i];
  Judged j;
  for (int k = 0; k < D; ++k) j.starts_at_q0 = j.starts_at_q0 && traj[k] == b.q0[i * D + k];
  double last[D];
  for (int k = 0; k < D; ++k) last[k] = traj[N * D + k];
  if (b.goal_kinds[i] == KILN_TRAJOPT_GOAL_JOINT) {
    for (int k = 0; k < D; ++k) j.position_error = std::max(j.position_error, std::fabs(last[k] - b.joint_goals[i * D + k]));
  } else {
    double p[3], R[9];
    Fk::fk(last, p, R);
    const float *g = b.pose_goals.data() + size_t{i} * 7;
    j.position_error = std::sqrt((p[0] - g[0]) * (p[0] - g[0]) + (p[1] - g[1]) * (p[1] - g[1]) + (p[2] - g[2]) * (p[2] - g[2]));
    const Eigen::Quaterniond goal = Eigen::Quaterniond(g[3], g[4], g[5], g[6]).normalized();
    const Eigen::Matrix3d rotation = Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(R);
    const Eigen::Quaterniond tip(rotation);
    j.orientation_error = tip.angularDistance(goal);
  }
  for (int k = 0; k <= N; ++k) {
    double q[D], qd[D], qdd[D], tau[D];
    for (int a = 0; a < D; ++a) {
      const double here = traj[k * D + a], prev = k > 0 ? traj[(k - 1) * D + a] : here - dt * b.qd0[i * D + a];
      const double next = k < N ? traj[(k + 1) * D + a] : here;
      q[a] = here;
      qd[a] = k > 0 ? (here - prev) / dt : b.qd0[i * D + a];
      qdd[a] = k < N ? (next - 2 * here + prev) / (dt * dt) : 0.0;
    }
    Dyn::rnea(q, qd, qdd, tau);
    for (int a = 0; a < D; ++a) {
      if (Dyn::kPositionLimited[a])
        j.position_violation = std::max({j.position_violation, Dyn::kLower[a] - q[a], q[a] - Dyn::kUpper[a]});
      if (k > 0 && Dyn::kVelocityLimit[a] > 0)
        j.velocity_violation = std::max(j.velocity_violation, std::fabs(qd[a]) - Dyn::kVelocityLimit[a]);
      if (Dyn::kEffortLimit[a] > 0) j.torque_violation = std::max(j.torque_violation, std::fabs(tau[a]) - Dyn::kEffortLimit[a]);
    }
  }
  return j;
}

}  // namespace kiln_trajopt_common
