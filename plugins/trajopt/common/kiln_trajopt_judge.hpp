// kiln TrajOpt: judging a returned trajectory without trusting what the solver reported: the goal
// error from a model's FK in double at the returned q_N, and every limit from the returned
// positions (velocities by the interface's finite differences, torques by the model's RNEA in
// double), against the model's (the URDF's) limits. The model is the plugin's own where it offers
// kiln.robotmodel/1, or generated headers (kiln_trajopt_model.hpp).
#pragma once

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln_trajopt_batch.hpp"
#include "kiln_trajopt_model.hpp"

namespace kiln_trajopt_common {

struct Judged {
  double position_error = 0, orientation_error = 0;  // m (joint goals: rad, max over joints; tracking: max over knots), rad
  double position_violation = 0, velocity_violation = 0, torque_violation = 0;
  bool starts_at_q0 = true;
  bool meets(double position_tolerance = 1e-3, double orientation_tolerance = 1e-2) const {
    return starts_at_q0 && position_error <= position_tolerance && orientation_error <= orientation_tolerance &&
           position_violation <= 0 && velocity_violation <= 0 && torque_violation <= 0;
  }
};

// Trajectory traj ((N + 1) x dof, knot 0 the start) of problem i of b, judged with model.
inline Judged judge(const Model &model, const HostBatch &b, uint32_t i, const float *traj) {
  const size_t D = model.dof;
  const size_t N = b.horizon;
  const double dt = b.dt[i];
  Judged j;
  for (size_t k = 0; k < D; ++k) j.starts_at_q0 = j.starts_at_q0 && traj[k] == b.q0[i * D + k];
  std::vector<double> q(traj, traj + (N + 1) * D), qd((N + 1) * D), qdd((N + 1) * D), tau((N + 1) * D);
  const double *last = q.data() + N * D;
  if (b.goal_kinds[i] == KILN_TRAJOPT_GOAL_TRACK) {  // the largest error over knots 1..N
    for (size_t k = 1; k <= N; ++k) {
      double pose[7];
      model.fk(q.data() + k * D, 1, pose);
      const float *ref = b.track_poses.data() + (size_t{i} * N + k - 1) * 7;
      const double d = std::sqrt((pose[0] - ref[0]) * (pose[0] - ref[0]) + (pose[1] - ref[1]) * (pose[1] - ref[1]) +
                                 (pose[2] - ref[2]) * (pose[2] - ref[2]));
      j.position_error = std::max(j.position_error, d);
      if (!b.track_weights.empty() && b.track_weights[(size_t{i} * N + k - 1) * 2 + 1] != 0) {
        const Eigen::Quaterniond want = Eigen::Quaterniond(ref[3], ref[4], ref[5], ref[6]).normalized();
        const Eigen::Quaterniond tip = Eigen::Quaterniond(pose[3], pose[4], pose[5], pose[6]).normalized();
        j.orientation_error = std::max(j.orientation_error, tip.angularDistance(want));
      }
    }
  } else if (b.goal_kinds[i] == KILN_TRAJOPT_GOAL_JOINT) {
    for (size_t k = 0; k < D; ++k) j.position_error = std::max(j.position_error, std::fabs(last[k] - b.joint_goals[i * D + k]));
  } else {
    double pose[7];
    model.fk(last, 1, pose);
    const float *g = b.pose_goals.data() + size_t{i} * 7;
    j.position_error = std::sqrt((pose[0] - g[0]) * (pose[0] - g[0]) + (pose[1] - g[1]) * (pose[1] - g[1]) +
                                 (pose[2] - g[2]) * (pose[2] - g[2]));
    const Eigen::Quaterniond goal = Eigen::Quaterniond(g[3], g[4], g[5], g[6]).normalized();
    const Eigen::Quaterniond tip = Eigen::Quaterniond(pose[3], pose[4], pose[5], pose[6]).normalized();
    j.orientation_error = tip.angularDistance(goal);
  }
  for (size_t k = 0; k <= N; ++k) {
    for (size_t a = 0; a < D; ++a) {
      const double here = q[k * D + a], prev = k > 0 ? q[(k - 1) * D + a] : here - dt * b.qd0[i * D + a];
      const double next = k < N ? q[(k + 1) * D + a] : here;
      qd[k * D + a] = k > 0 ? (here - prev) / dt : b.qd0[i * D + a];
      qdd[k * D + a] = k < N ? (next - 2 * here + prev) / (dt * dt) : 0.0;
    }
  }
  model.rnea(q.data(), qd.data(), qdd.data(), static_cast<uint32_t>(N + 1), tau.data());
  for (size_t k = 0; k <= N; ++k) {
    for (size_t a = 0; a < D; ++a) {
      const double x = q[k * D + a], v = qd[k * D + a], t = tau[k * D + a];
      if (model.position_limited[a])
        j.position_violation = std::max({j.position_violation, model.lower[a] - x, x - model.upper[a]});
      if (k > 0 && model.velocity_limit[a] > 0)
        j.velocity_violation = std::max(j.velocity_violation, std::fabs(v) - model.velocity_limit[a]);
      if (model.effort_limit[a] > 0) j.torque_violation = std::max(j.torque_violation, std::fabs(t) - model.effort_limit[a]);
    }
  }
  return j;
}

// The same with the generated headers Fk and Dyn.
template <class Fk, class Dyn>
Judged judge(const HostBatch &b, uint32_t i, const float *traj) {
  return judge(shared_generated_model<Fk, Dyn>(), b, i, traj);
}

}  // namespace kiln_trajopt_common
