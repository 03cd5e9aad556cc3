// kiln TrajOpt plugin: the sizes, settings and per-launch parameters every part of the solver
// shares (kernels, host path, instance). The robot comes from the two generated headers of the
// translation unit (kiln-urdf-fk: kiln_fk_chain.cuh and kiln_rnea_chain.cuh), the horizon from
// KILN_TRAJOPT_N (one build per N).
#pragma once

#include <stdint.h>

#include "kiln/ext/trajopt.h"
#include "kiln_fk_chain.cuh"
#include "kiln_joint_limits.hpp"
#include "kiln_rnea_chain.cuh"

#ifndef KILN_TRAJOPT_N
#error "KILN_TRAJOPT_N (the horizon: time steps per trajectory) must be defined, e.g. -DKILN_TRAJOPT_N=64"
#endif

#if defined(__CUDACC__)
#define KILN_TRAJOPT_HD __host__ __device__ __forceinline__
#else
#define KILN_TRAJOPT_HD inline
#endif
// A loop whose index must be a compile-time constant in a device's code (register arrays); a host
// compiler unrolls what it sees fit.
#if defined(__CUDA_ARCH__)
#define KILN_TRAJOPT_UNROLL _Pragma("unroll")
#else
#define KILN_TRAJOPT_UNROLL
#endif

namespace kiln_trajopt {

using Fk = kiln_fk::Chain;
using Dyn = kiln_rnea::Chain;
constexpr int kDof = Dyn::kDof;
static_assert(Fk::kDof == Dyn::kDof, "the FK and dynamics headers must describe the same chain");
static_assert(kDof >= 1 && kDof <= kiln_plugins::kTrajoptMaxJoints, "the solver handles chains of 1 to kTrajoptMaxJoints joints");
constexpr int kN = KILN_TRAJOPT_N;
static_assert(kN >= 2 && kN <= 1024, "KILN_TRAJOPT_N must be within 2..1024");
constexpr int kKnots = kN + 1;
constexpr int kVars = kN * kDof;         // decision variables q_1..q_N
constexpr int kBand = 3 * kDof;          // stored entries per row of the banded normal matrix (diagonal + 3 dof - 1)
constexpr int kFdJobs = 3 * kDof;        // per knot: dof q-perturbed and dof qd-perturbed RNEAs, dof mass-matrix columns
constexpr int kGoalRows = kDof > 6 ? kDof : 6;
constexpr float kLimitMargin = 0.95f;    // the penalties act beyond this fraction of the velocity and torque limits
constexpr float kPositionInset = 1e-4f;  // positions are projected this far inside their limits (rad or m)
constexpr float kLimitWeight = 30.0f;    // hinge residual per unit of (|x| / (margin * limit) - 1)
constexpr float kTerminalVelocityShare = 0.1f;  // terminal velocity residual weight / goal weight
constexpr float kFdStep = 1e-3f;         // forward-difference step of the torque Jacobians (rad, rad/s)
constexpr float kInitialDamping = 1e-3f;

constexpr float kDefaultGoalWeight = 1000.0f;
constexpr float kDefaultSmoothnessWeight = 0.05f;
constexpr float kDefaultEffortWeight = 0.5f;

struct Settings {
  uint32_t max_iterations;
  uint32_t seeds;
  uint32_t flags;
  float position_tolerance;
  float orientation_tolerance;
  float dt;
  float goal_weight;
  float smoothness_weight;
  float effort_weight;
  // Scales the goal's (or the reference's) weights: 1, lowered by the limit-first rounds (trajopt_seed.cuh).
  float goal_scale;
  uint64_t random_seed;
};

// The chain's limits in float. lower/upper: the projection bounds (inset), velocity/effort: 0 = none.
struct Limits {
  float lower[kDof];
  float upper[kDof];
  float true_lower[kDof];
  float true_upper[kDof];
  float velocity[kDof];
  float effort[kDof];
  uint32_t position_limited[kDof];
};

// What one seed ended with (written by the seed kernel, read by the finalize kernel).
struct SeedSummary {
  float cost;
  float position_error;
  float orientation_error;
  float velocity_violation;
  float torque_violation;
  uint32_t iterations;
  uint32_t converged;
  uint32_t finite;
  KILN_TRAJOPT_HD bool within_limits() const { return finite && velocity_violation <= 0.0f && torque_violation <= 0.0f; }
};

// A tracking problem's terms at one knot: the residual (6: position, orientation) and its Jacobian (6 x dof).
constexpr int kTrackRows = 6;
constexpr int kTrackStride = kTrackRows + kTrackRows * kDof;
constexpr float kDefaultTrackShare = 0.1f;  // default position weight of a tracking knot / goal weight

// Per-seed scratch, in floats. Two evaluation buffers: the current point's and a trial's.
struct EvalLayout {
  static constexpr int kTau = 0;                                // kKnots * dof: RNEA at each knot
  static constexpr int kFk = kTau + kKnots * kDof;              // p (3), R (9), J (6 * dof)
  static constexpr int kKnotFields = kFk + 12 + 6 * kDof;       // kKnots * 5 * dof: wt, ut, wv, uv, ra
  static constexpr int kGoal = kKnotFields + kKnots * 5 * kDof; // residual (kGoalRows), Jacobian (kGoalRows * dof)
  static constexpr int kTrack = kGoal + kGoalRows + kGoalRows * kDof;  // kKnots * kTrackStride (tracking problems)
  static constexpr int kSize = kTrack + kKnots * kTrackStride;
};
struct ScratchLayout {
  static constexpr int kX = 0;
  static constexpr int kTrial = kX + kVars;
  static constexpr int kStep = kTrial + kVars;
  static constexpr int kEval = kStep + kVars;                   // 2 * EvalLayout::kSize
  static constexpr int kJobs = kEval + 2 * EvalLayout::kSize;   // kKnots * kFdJobs * dof
  static constexpr int kDtau = kJobs + kKnots * kFdJobs * kDof; // kKnots * 3 slots * dof * dof (column-major per slot)
  static constexpr int kSize = kDtau + kKnots * 3 * kDof * kDof;
};
// The factorisation's scalar, and its working set: the damped band and the right-hand side (shared
// memory on a device), in Reals.
#ifdef KILN_TRAJOPT_DOUBLE_FACTOR
using Real = double;
#else
using Real = float;  // met every accuracy check (tests/trajopt): the goal at 1e-6 m, the reference's costs
#endif
constexpr int kBandReals = kVars * kBand + kVars;

// One batch solve, by value to both kernels and to the host path. Per-problem arrays hold `count`.
struct KernelParams {
  uint32_t count;
  uint32_t seeds;
  // The seed kernel's launch covers seeds [seed_base, seed_base + seed_span) of every problem: seed 0
  // first, then the others for the problems it left unconverged (trajopt_kernels.cuh).
  uint32_t seed_base;
  uint32_t seed_span;
  uint32_t limits_pass;  // the seed kernel's third launch: best seeds brought within the limits
  Settings settings;
  Limits limits;
  const float *q0;
  const float *qd0;               // nullptr: at rest
  const uint8_t *goal_kinds;      // nullptr: all pose goals
  const float *pose_goals;
  const float *joint_goals;
  const float *dt;                // nullptr: settings.dt
  const float *initial;           // nullptr, or count * kN * dof
  const float *track_poses;       // nullptr, or count * kN * 7 (tracking problems' references)
  const float *track_weights;     // nullptr (defaults), or count * kN * 2
  float *scratch;                 // count * seeds * ScratchLayout::kSize (device); host: one seed's
  SeedSummary *summaries;         // count * seeds
  uint32_t *done;                 // count flags: a seed of the problem converged
  // Outputs.
  float *q;
  float *qd;
  float *torques;
  uint8_t *converged;
  float *position_error;
  float *orientation_error;
  float *position_violation;
  float *velocity_violation;
  float *torque_violation;
  float *cost;
  uint32_t *iterations;
  uint8_t *within_limits;
  // The slots' last solutions (max_batch * kVars floats, max_batch flags); nullptr: not used.
  float *warm_q;
  uint8_t *warm_valid;
  uint32_t warm_start;
};

}  // namespace kiln_trajopt
