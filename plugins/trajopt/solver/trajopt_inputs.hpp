// kiln TrajOpt plugin: a solve's arguments: the checks of kiln.trajopt/1 (every refusal a status
// and a message naming the problem and the field), the options resolved into Settings, and the
// moves of inputs and outputs between the caller's buffers, the pinned staging and the device.
#pragma once

#include <stdint.h>

#include <cmath>
#include <cstring>

#include "kiln/ext/trajopt.h"
#include "kiln/plugin.hpp"
#include "kiln_solve_in_flight.hpp"
#include "trajopt_layout.hpp"
#include "trajopt_params.hpp"

namespace kiln_trajopt {
namespace inputs {

inline bool nonneg(float v) { return std::isfinite(v) && v >= 0.0f; }

// options (NULL: defaults) -> settings; nullptr or what is wrong.
inline const char *resolve(const kiln_trajopt_options *o, Settings *s) {
  kiln_trajopt_options in{};
  if (o != nullptr) {
    if (o->struct_size == 0) return "options->struct_size is 0";
    std::memcpy(&in, o, o->struct_size < sizeof in ? o->struct_size : sizeof in);
  }
  if (in.seeds_per_target > KILN_TRAJOPT_MAX_SEEDS) return "options->seeds_per_target exceeds KILN_TRAJOPT_MAX_SEEDS (8)";
  if (!nonneg(in.position_tolerance) || !nonneg(in.orientation_tolerance)) return "a tolerance is negative or not finite";
  if (!nonneg(in.dt)) return "options->dt is negative or not finite";
  if (!nonneg(in.goal_weight) || !nonneg(in.smoothness_weight) || !nonneg(in.effort_weight))
    return "a cost weight is negative or not finite";
  if ((in.flags & ~(KILN_TRAJOPT_SOLVE_WARM_START | KILN_TRAJOPT_SOLVE_WARM_SHIFT)) != 0)
    return "options->flags holds a bit kiln.trajopt/1 does not define";
  s->max_iterations = in.max_iterations != 0 ? in.max_iterations : KILN_TRAJOPT_DEFAULT_MAX_ITERATIONS;
  s->seeds = in.seeds_per_target != 0 ? in.seeds_per_target : KILN_TRAJOPT_DEFAULT_SEEDS_PER_TARGET;
  s->flags = in.flags;
  s->position_tolerance = in.position_tolerance != 0 ? in.position_tolerance : KILN_TRAJOPT_DEFAULT_POSITION_TOLERANCE;
  s->orientation_tolerance =
      in.orientation_tolerance != 0 ? in.orientation_tolerance : KILN_TRAJOPT_DEFAULT_ORIENTATION_TOLERANCE;
  s->dt = in.dt != 0 ? in.dt : KILN_TRAJOPT_DEFAULT_DT;
  s->goal_weight = in.goal_weight != 0 ? in.goal_weight : kDefaultGoalWeight;
  s->smoothness_weight = in.smoothness_weight != 0 ? in.smoothness_weight : kDefaultSmoothnessWeight;
  s->effort_weight = in.effort_weight != 0 ? in.effort_weight : kDefaultEffortWeight;
  s->goal_scale = 1.0f;
  s->random_seed = in.random_seed;
  return nullptr;
}

inline bool all_finite(const float *v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

// Tracking problem i's reference poses and weights (host memory).
inline kiln_status check_reference(const kiln_trajopt_problem *problem, uint32_t i, kiln::plugin::Message &message) {
  for (int k = 1; k <= kN; ++k) {
    const size_t at = size_t{i} * kN + (k - 1);
    const float *pose = problem->track_poses + at * KILN_TRAJOPT_POSE_SIZE;
    if (!all_finite(pose, KILN_TRAJOPT_POSE_SIZE)) {
      message.format("solve: problem %u: its reference pose at knot %d (track_poses) is not finite", i, k);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (pose[3] * pose[3] + pose[4] * pose[4] + pose[5] * pose[5] + pose[6] * pose[6] < 1e-12f) {
      message.format("solve: problem %u: its reference pose at knot %d has a zero quaternion", i, k);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (problem->track_weights != nullptr &&
        (!nonneg(problem->track_weights[2 * at]) || !nonneg(problem->track_weights[2 * at + 1]))) {
      message.format("solve: problem %u: a tracking weight at knot %d is negative or not finite", i, k);
      return KILN_ERR_INVALID_ARGUMENT;
    }
  }
  return KILN_OK;
}

// The checks of a solve of count > 0 after the kit's (plugins/common/kiln_solver_instance.hpp:
// struct sizes, options, count, memory): the arrays there, host-memory inputs finite.
inline kiln_status check(const kiln_trajopt_problem *problem, const kiln_trajopt_result *result, bool device_memory,
                         kiln::plugin::Message &message) {
  const uint32_t count = problem->count;
  if (problem->q0 == nullptr || result->q == nullptr) {
    message.set("solve: problem->q0 and result->q must not be NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  bool pose = problem->goal_kinds == nullptr, joint = false, track = false;
  if (device_memory) {
    joint = problem->goal_kinds != nullptr;
    pose = true;  // the kinds cannot be read here: both arrays are required with kinds (a tracking
                  // problem without track_poses is returned not converged, NaN errors)
  } else if (problem->goal_kinds != nullptr) {
    for (uint32_t i = 0; i < count; ++i) {
      const uint8_t kind = problem->goal_kinds[i];
      if (kind != KILN_TRAJOPT_GOAL_POSE && kind != KILN_TRAJOPT_GOAL_JOINT && kind != KILN_TRAJOPT_GOAL_TRACK) {
        message.format("solve: problem %u: goal kind %u is none of KILN_TRAJOPT_GOAL_POSE (0), _JOINT (1), _TRACK (2)",
                       i, kind);
        return KILN_ERR_INVALID_ARGUMENT;
      }
      (kind == KILN_TRAJOPT_GOAL_POSE ? pose : kind == KILN_TRAJOPT_GOAL_JOINT ? joint : track) = true;
    }
  }
  if (track && problem->track_poses == nullptr) {
    message.set("solve: a problem tracks a reference (KILN_TRAJOPT_GOAL_TRACK) but problem->track_poses is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  if ((pose && problem->pose_goals == nullptr) || (joint && problem->joint_goals == nullptr)) {
    message.format("solve: a problem has a %s goal but problem->%s is NULL%s", pose && problem->pose_goals == nullptr ? "pose" : "joint",
                   pose && problem->pose_goals == nullptr ? "pose_goals" : "joint_goals",
                   device_memory && problem->goal_kinds != nullptr ? " (device memory with goal_kinds: both arrays are required)" : "");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  if (device_memory) return KILN_OK;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = size_t{i} * kDof;
    if (!all_finite(problem->q0 + at, kDof) || (problem->qd0 != nullptr && !all_finite(problem->qd0 + at, kDof))) {
      message.format("solve: problem %u: the start state (q0 or qd0) is not finite", i);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (problem->dt != nullptr && !(std::isfinite(problem->dt[i]) && problem->dt[i] > 0.0f)) {
      message.format("solve: problem %u: dt = %g is not a positive finite time step", i, static_cast<double>(problem->dt[i]));
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (problem->goal_kinds != nullptr && problem->goal_kinds[i] == KILN_TRAJOPT_GOAL_TRACK) {
      const kiln_status s = check_reference(problem, i, message);
      if (s != KILN_OK) return s;
      continue;
    }
    const bool is_joint = problem->goal_kinds != nullptr && problem->goal_kinds[i] == KILN_TRAJOPT_GOAL_JOINT;
    if (is_joint ? !all_finite(problem->joint_goals + at, kDof) : !all_finite(problem->pose_goals + size_t{i} * 7, 7)) {
      message.format("solve: problem %u: its %s goal is not finite", i, is_joint ? "joint" : "pose");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (!is_joint) {
      const float *g = problem->pose_goals + size_t{i} * 7 + 3;
      if (g[0] * g[0] + g[1] * g[1] + g[2] * g[2] + g[3] * g[3] < 1e-12f) {
        message.format("solve: problem %u: the pose goal's quaternion is zero", i);
        return KILN_ERR_INVALID_ARGUMENT;
      }
    }
  }
  return KILN_OK;
}

// The kernels read and write the caller's buffers (host only, or device memory).
inline void point_at_caller(const kiln_trajopt_problem &pr, const kiln_trajopt_result &r, KernelParams *p) {
  p->q0 = pr.q0, p->qd0 = pr.qd0, p->goal_kinds = pr.goal_kinds, p->pose_goals = pr.pose_goals;
  p->joint_goals = pr.joint_goals, p->dt = pr.dt, p->initial = pr.initial_trajectories;
  p->track_poses = pr.track_poses, p->track_weights = pr.track_weights, p->within_limits = r.within_limits;
  p->q = r.q, p->qd = r.qd, p->torques = r.torques, p->converged = r.converged, p->position_error = r.position_error;
  p->orientation_error = r.orientation_error, p->position_violation = r.position_violation;
  p->velocity_violation = r.velocity_violation, p->torque_violation = r.torque_violation, p->cost = r.cost;
  p->iterations = r.iterations;
}

// The kernels read and write the device arrays (host memory staged); absent inputs stay absent.
inline void point_at(const Arrays &d, const kiln_trajopt_problem &pr, KernelParams *p) {
  p->q0 = d.q0, p->qd0 = pr.qd0 ? d.qd0 : nullptr, p->goal_kinds = pr.goal_kinds ? d.goal_kinds : nullptr;
  p->pose_goals = pr.pose_goals ? d.pose_goals : nullptr, p->joint_goals = pr.joint_goals ? d.joint_goals : nullptr;
  p->dt = pr.dt ? d.dt : nullptr, p->initial = pr.initial_trajectories ? d.initial : nullptr;
  p->track_poses = pr.track_poses ? d.track_poses : nullptr, p->track_weights = pr.track_weights ? d.track_weights : nullptr;
  p->within_limits = d.within_limits;
  p->q = d.q, p->qd = d.qd, p->torques = d.torques, p->converged = d.converged, p->position_error = d.position_error;
  p->orientation_error = d.orientation_error, p->position_violation = d.position_violation;
  p->velocity_violation = d.velocity_violation, p->torque_violation = d.torque_violation, p->cost = d.cost;
  p->iterations = d.iterations;
}

// Host-memory inputs and where each is staged and goes (absent inputs: from nullptr).
struct InputItem {
  const void *from;
  void *staging;
  void *device;
  size_t bytes;
};
constexpr int kInputs = 9;
inline void input_items(const kiln_trajopt_problem &pr, const Arrays &h, const Arrays &d, InputItem *out) {
  const size_t n = pr.count;
  const InputItem items[kInputs] = {{pr.q0, h.q0, d.q0, n * kDof * 4},
                                    {pr.qd0, h.qd0, d.qd0, n * kDof * 4},
                                    {pr.goal_kinds, h.goal_kinds, d.goal_kinds, n},
                                    {pr.pose_goals, h.pose_goals, d.pose_goals, n * KILN_TRAJOPT_POSE_SIZE * 4},
                                    {pr.joint_goals, h.joint_goals, d.joint_goals, n * kDof * 4},
                                    {pr.dt, h.dt, d.dt, n * 4},
                                    {pr.initial_trajectories, h.initial, d.initial, n * kVars * 4},
                                    {pr.track_poses, h.track_poses, d.track_poses, n * kN * KILN_TRAJOPT_POSE_SIZE * 4},
                                    {pr.track_weights, h.track_weights, d.track_weights, n * kN * 2 * 4}};
  for (int i = 0; i < kInputs; ++i) out[i] = items[i];
}

// Host-memory inputs into pinned staging, so the caller may reuse them at once (host work: never
// part of a captured graph).
inline void stage(const kiln_trajopt_problem &pr, const Arrays &h) {
  InputItem items[kInputs];
  input_items(pr, h, Arrays{}, items);
  for (const InputItem &item : items)
    if (item.from != nullptr) std::memcpy(item.staging, item.from, item.bytes);
}

// The staged inputs up to the device.
template <class Device>
kiln_status upload(Device &gpu, const kiln_trajopt_problem &pr, const Arrays &h, const Arrays &d, void *stream,
                   kiln::plugin::Message &message) {
  const size_t n = pr.count;
  const char *what = "solve: copying the inputs to the device";
  // Small instances: the whole group (absent inputs' bytes too, which no kernel reads) in one copy.
  if (const size_t span = kiln_plugin_common::one_copy_span(d.q0, d.track_weights + n * kN * 2, h.q0,
                                                             h.track_weights + n * kN * 2))
    return gpu.to_device(d.q0, h.q0, span, stream, what, message);
  InputItem items[kInputs];
  input_items(pr, h, d, items);
  for (const InputItem &item : items) {
    if (item.from == nullptr) continue;
    const kiln_status s = gpu.to_device(item.device, item.staging, item.bytes, stream, what, message);
    if (s != KILN_OK) return s;
  }
  return KILN_OK;
}

struct OutputItem {
  void *caller;
  void *staging;
  const void *device;
  size_t bytes;
};
constexpr int kOutputs = 12;
inline void output_items(const Arrays &h, const Arrays &d, const kiln_trajopt_result &r, size_t n, OutputItem *out) {
  const size_t traj = n * kKnots * kDof * 4;
  const OutputItem items[kOutputs] = {{r.q, h.q, d.q, traj},
                                {r.qd, h.qd, d.qd, traj},
                                {r.torques, h.torques, d.torques, traj},
                                {r.converged, h.converged, d.converged, n},
                                {r.position_error, h.position_error, d.position_error, n * 4},
                                {r.orientation_error, h.orientation_error, d.orientation_error, n * 4},
                                {r.position_violation, h.position_violation, d.position_violation, n * 4},
                                {r.velocity_violation, h.velocity_violation, d.velocity_violation, n * 4},
                                {r.torque_violation, h.torque_violation, d.torque_violation, n * 4},
                                {r.cost, h.cost, d.cost, n * 4},
                                {r.iterations, h.iterations, d.iterations, n * 4},
                                {r.within_limits, h.within_limits, d.within_limits, n}};
  for (int i = 0; i < kOutputs; ++i) out[i] = items[i];
}

// The outputs the caller asked for, device -> staging (in stream order).
template <class Device>
kiln_status download(Device &gpu, const Arrays &d, const Arrays &h, const kiln_trajopt_problem &pr, void *stream,
                     kiln::plugin::Message &message, const kiln_trajopt_result *r) {
  const char *what = "solve: copying the results back";
  if (const size_t span = kiln_plugin_common::one_copy_span(d.q, d.within_limits + pr.count, h.q, h.within_limits + pr.count))
    return gpu.to_host(h.q, d.q, span, stream, what, message);
  OutputItem items[kOutputs];
  output_items(h, d, *r, pr.count, items);
  for (const OutputItem &item : items) {
    if (item.caller == nullptr) continue;
    const kiln_status s = gpu.to_host(item.staging, item.device, item.bytes, stream, what, message);
    if (s != KILN_OK) return s;
  }
  return KILN_OK;
}

// wait(): staging -> the caller's buffers.
inline void copy_outputs(const Arrays &h, const kiln_trajopt_result &r, size_t n) {
  OutputItem items[kOutputs];
  output_items(h, Arrays{}, r, n, items);
  for (const OutputItem &item : items)
    if (item.caller != nullptr) std::memcpy(item.caller, item.staging, item.bytes);
}

}  // namespace inputs
}  // namespace kiln_trajopt
