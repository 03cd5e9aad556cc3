// kiln TrajOpt: host-side batches of kiln.trajopt/1 problems for the tests, the bench and the demo:
// the buffers and the structs pointing at them, reproducible random problems (start within the middle
// of the ranges, goal a joint vector up to +-delta away, or that vector's tip pose from a model's FK
// in double: kiln_trajopt_model.hpp), and the same problems in the CPU reference's form.
#pragma once

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <kiln/ext/trajopt.h>

#include "kiln_trajopt_model.hpp"

namespace kiln_trajopt_common {

enum class Goals { pose, joint, mixed };

struct HostBatch {
  HostBatch(uint32_t dof_, uint32_t horizon_, uint32_t count_)
      : dof(dof_), horizon(horizon_), count(count_), q0(size_t{count_} * dof_), qd0(q0.size()), joint_goals(q0.size()),
        pose_goals(size_t{count_} * KILN_TRAJOPT_POSE_SIZE), dt(count_, 0.02f), goal_kinds(count_, KILN_TRAJOPT_GOAL_POSE),
        q(size_t{count_} * (horizon_ + 1) * dof_), qd(q.size()), torques(q.size()), converged(count_),
        position_error(count_), orientation_error(count_), position_violation(count_), velocity_violation(count_),
        torque_violation(count_), cost(count_), iterations(count_), within_limits(count_) {
    options.struct_size = sizeof options;
    problem.struct_size = sizeof problem;
    result.struct_size = sizeof result;
    point();
  }
  // Re-points the structs at the vectors (after a copy, or to restore a field a test changed).
  void point() {
    problem.count = count;
    problem.memory = KILN_TRAJOPT_MEMORY_HOST;
    problem.q0 = q0.data(), problem.qd0 = qd0.data(), problem.goal_kinds = goal_kinds.data();
    problem.pose_goals = pose_goals.data(), problem.joint_goals = joint_goals.data(), problem.dt = dt.data();
    problem.initial_trajectories = nullptr, problem.options = &options;
    problem.track_poses = track_poses.empty() ? nullptr : track_poses.data();
    problem.track_weights = track_weights.empty() ? nullptr : track_weights.data();
    result.q = q.data(), result.qd = qd.data(), result.torques = torques.data(), result.converged = converged.data();
    result.position_error = position_error.data(), result.orientation_error = orientation_error.data();
    result.position_violation = position_violation.data(), result.velocity_violation = velocity_violation.data();
    result.torque_violation = torque_violation.data(), result.cost = cost.data(), result.iterations = iterations.data();
    result.within_limits = within_limits.data();
  }
  const float *trajectory(uint32_t i) const { return q.data() + size_t{i} * (horizon + 1) * dof; }
  uint32_t converged_count() const { return static_cast<uint32_t>(std::count(converged.begin(), converged.end(), 1)); }

  uint32_t dof, horizon, count;
  std::vector<float> q0, qd0, joint_goals, pose_goals, dt;
  std::vector<uint8_t> goal_kinds;
  std::vector<float> q, qd, torques;
  std::vector<uint8_t> converged;
  std::vector<float> position_error, orientation_error, position_violation, velocity_violation, torque_violation, cost;
  std::vector<uint32_t> iterations;
  std::vector<uint8_t> within_limits;
  // Tracking problems' references (count * horizon * 7) and weights (count * horizon * 2, or empty).
  std::vector<float> track_poses, track_weights;
  kiln_trajopt_options options{};
  kiln_trajopt_problem problem{};
  kiln_trajopt_result result{};
};

// Every problem's pose goal := the tip pose (the model's FK, double) at its joint goal.
inline void pose_goals_from_joint_goals(const Model &model, HostBatch &b) {
  for (uint32_t i = 0; i < b.count; ++i) {
    std::vector<double> g(model.dof);
    double pose[7];
    for (uint32_t j = 0; j < model.dof; ++j) g[j] = b.joint_goals[i * model.dof + j];
    model.fk(g.data(), 1, pose);
    for (int k = 0; k < 7; ++k) b.pose_goals[i * 7 + k] = static_cast<float>(pose[k]);
  }
}

// The same with the generated FK header Fk.
template <class Fk>
void pose_goals_from_joint_goals(HostBatch &b) {
  Model fk_only;
  fk_only.dof = Fk::kDof;
  fk_only.fk = generated_fk<Fk>();
  pose_goals_from_joint_goals(fk_only, b);
}

// Problem i := tracking the tip poses (the model's FK, double) of joint trajectory `joints` (knots
// 1..horizon, horizon * dof), positions weighted `position_weight` and orientations
// `orientation_weight` at every knot (both 0 and no weights yet: the interface's defaults).
inline void track_joint_trajectory(const Model &model, HostBatch &b, uint32_t i, const std::vector<double> &joints,
                                   float position_weight = 0, float orientation_weight = 0) {
  const uint32_t N = b.horizon;
  b.track_poses.resize(size_t{b.count} * N * KILN_TRAJOPT_POSE_SIZE, 0.0f);
  if (position_weight != 0 || orientation_weight != 0 || !b.track_weights.empty())
    b.track_weights.resize(size_t{b.count} * N * 2, 0.0f);
  for (uint32_t k = 0; k < N; ++k) {
    double pose[7];
    model.fk(joints.data() + size_t{k} * model.dof, 1, pose);
    for (int a = 0; a < 7; ++a) b.track_poses[(size_t{i} * N + k) * 7 + a] = static_cast<float>(pose[a]);
    if (!b.track_weights.empty()) {
      b.track_weights[(size_t{i} * N + k) * 2] = position_weight;
      b.track_weights[(size_t{i} * N + k) * 2 + 1] = orientation_weight;
    }
  }
  b.goal_kinds[i] = KILN_TRAJOPT_GOAL_TRACK;
  b.point();
}

// Random problems into b (all dt = dt), from model's limits and FK.
inline void random_problems(const Model &model, HostBatch &b, uint64_t seed, double delta, float dt, Goals goals) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const uint32_t D = model.dof;
  for (uint32_t i = 0; i < b.count; ++i) {
    for (uint32_t j = 0; j < D; ++j) {
      const double mid = (model.lower[j] + model.upper[j]) / 2, half = (model.upper[j] - model.lower[j]) / 2;
      const double a = static_cast<float>(mid + 0.6 * half * u(rng));
      const double g = std::clamp(a + delta * u(rng), model.lower[j] + 0.05, model.upper[j] - 0.05);
      b.q0[i * D + j] = static_cast<float>(a);
      b.qd0[i * D + j] = 0.0f;
      b.joint_goals[i * D + j] = static_cast<float>(g);
    }
    b.dt[i] = dt;
    b.goal_kinds[i] = goals == Goals::joint || (goals == Goals::mixed && i % 2 == 1) ? KILN_TRAJOPT_GOAL_JOINT
                                                                                      : KILN_TRAJOPT_GOAL_POSE;
  }
  pose_goals_from_joint_goals(model, b);
}

// The same from the generated chains Fk (FK) and Dyn (limits).
template <class Fk, class Dyn>
void random_problems(HostBatch &b, uint64_t seed, double delta, float dt, Goals goals) {
  random_problems(generated_model<Fk, Dyn>("the generated headers"), b, seed, delta, dt, goals);
}

// Problem i of b as the CPU reference takes it (Ref = kiln_trajopt_ref::Reference<...>).
template <class Ref>
typename Ref::Problem reference_problem(const HostBatch &b, uint32_t i) {
  typename Ref::Problem p;
  for (int j = 0; j < Ref::D; ++j) {
    p.q0[j] = b.q0[i * Ref::D + j];
    p.qd0[j] = b.qd0[i * Ref::D + j];
    p.goal_q[j] = b.joint_goals[i * Ref::D + j];
  }
  p.joint_goal = b.goal_kinds[i] == KILN_TRAJOPT_GOAL_JOINT;
  const float *g = b.pose_goals.data() + size_t{i} * 7;
  p.p = Eigen::Vector3d(g[0], g[1], g[2]);
  p.R = Eigen::Quaterniond(g[3], g[4], g[5], g[6]).normalized().toRotationMatrix();
  p.dt = b.dt[i];
  return p;
}

}  // namespace kiln_trajopt_common
