// kiln IK: what the GPU solver (plugins/ik/solver) and the CPU reference (plugins/ik/reference)
// share: the resolved options, the constants of the algorithm and the counter-based generator
// of starting points. Host and device code (__host__ __device__ under nvcc).
//
// The algorithm (both implementations follow it step by step):
//
//   For each target, seeds_per_target seeds run in lockstep, iteration by iteration.
//   Seed s of target t starts (restart r = 0) from:
//     s = 0: initial_q of the target when given (projected into the limits), else, with
//            KILN_IK_SOLVE_WARM_START, the plugin's last solution for slot t when it has one (the
//            reference has no slots: its caller passes that q as initial q), else the middle of
//            every joint's range (0 for continuous joints);
//     s > 0: q_j = lower_j + u(key, t, s, r, j) * (upper_j - lower_j), u uniform in [0, 1) from
//            the counter-based generator below.
//   Error at q: e = [p_target - p(q); w] with w the rotation vector (axis * angle) of
//   R_target R(q)^T; position error |e[0:3]| (m), orientation error |w| (rad), cost = |e|^2.
//   One iteration of a seed (Levenberg-Marquardt on the damped least-squares step):
//     J = geometric Jacobian at q (6 x dof, base frame);
//     dq = J^T (J J^T + lambda I)^-1 e; when that would push a joint that sits at one of its
//     limits further out, dq once more with that joint's column of J zeroed (the free joints
//     make up for it);  q' = project(q + dq)  (clamp into [lower, upper]; continuous joints
//     wrapped into [-pi, pi]);
//     cost(q') < cost(q): accept q <- q', lambda <- max(lambda * kLambdaDown, kLambdaMin);
//     else reject, lambda <- lambda * kLambdaUp.
//     Stall: lambda > kLambdaMax, or the cost fell by less than kStallRatio over the last
//     kStallWindow iterations: restart the seed (r + 1) from a fresh random q, lambda0.
//   A seed has converged when position error < position_tolerance and orientation error <
//   orientation_tolerance. At the top of every iteration a target whose seeds include a
//   converged one stops; otherwise it stops after max_iterations.
//   Result of a target: its best seed: converged before not converged, then the smaller cost,
//   then the lower seed index.
#pragma once

#include <stdint.h>

#include "kiln/ext/ik.h"

#if defined(__CUDACC__)
#define KILN_IK_HD __host__ __device__ __forceinline__
#else
#define KILN_IK_HD inline
#endif

namespace kiln_ik {

// Levenberg-Marquardt schedule (see above).
constexpr float kLambdaDown = 0.25f;
constexpr float kLambdaUp = 8.0f;
constexpr float kLambdaMin = 1e-6f;
constexpr float kLambdaMax = 1e3f;
constexpr uint32_t kStallWindow = 12;
constexpr float kStallRatio = 0.05f;  // the cost must fall by 5 % per window
constexpr double kPi = 3.14159265358979323846;

// The initial damping when options->damping is 0: kiln.ik/1's default unless a plugin variant is
// built with another (plugins/ik/README.md, "Variants").
#ifndef KILN_IK_INITIAL_DAMPING
#define KILN_IK_INITIAL_DAMPING KILN_IK_DEFAULT_DAMPING
#endif

// The KILN_IK_SOLVE_* flags this code honours.
constexpr uint32_t kSolveFlags = KILN_IK_SOLVE_WARM_START;

// kiln_ik_options with its defaults applied.
struct Settings {
  uint32_t max_iterations = KILN_IK_DEFAULT_MAX_ITERATIONS;
  float position_tolerance = KILN_IK_DEFAULT_POSITION_TOLERANCE;
  float orientation_tolerance = KILN_IK_DEFAULT_ORIENTATION_TOLERANCE;
  uint32_t seeds = KILN_IK_DEFAULT_SEEDS_PER_TARGET;
  float damping = KILN_IK_INITIAL_DAMPING;
  uint64_t random_seed = 0;
  uint32_t flags = 0;  // KILN_IK_SOLVE_*
};

#if !defined(__CUDACC_RTC__)  // host code: NVRTC (the split form's device images) compiles device code only
// Read options (NULL: defaults; fields past struct_size: defaults; 0: defaults). Returns
// nullptr, or a static string naming the bad field.
inline const char *resolve_settings(const kiln_ik_options *options, Settings *out) {
  *out = Settings{};
  if (options == nullptr) return nullptr;
  const uint32_t size = options->struct_size;
  if (size == 0) return "options->struct_size is 0 (set it to sizeof(kiln_ik_options))";
#define KILN_IK_HAS_(field) (size >= offsetof(kiln_ik_options, field) + sizeof(options->field))
  if (KILN_IK_HAS_(max_iterations) && options->max_iterations != 0) out->max_iterations = options->max_iterations;
  if (KILN_IK_HAS_(position_tolerance) && options->position_tolerance != 0.0f) {
    if (!(options->position_tolerance > 0.0f)) return "options->position_tolerance must be > 0 (or 0 for the default)";
    out->position_tolerance = options->position_tolerance;
  }
  if (KILN_IK_HAS_(orientation_tolerance) && options->orientation_tolerance != 0.0f) {
    if (!(options->orientation_tolerance > 0.0f)) {
      return "options->orientation_tolerance must be > 0 (or 0 for the default)";
    }
    out->orientation_tolerance = options->orientation_tolerance;
  }
  if (KILN_IK_HAS_(seeds_per_target) && options->seeds_per_target != 0) {
    if (options->seeds_per_target > KILN_IK_MAX_SEEDS) return "options->seeds_per_target exceeds KILN_IK_MAX_SEEDS (32)";
    out->seeds = options->seeds_per_target;
  }
  if (KILN_IK_HAS_(damping) && options->damping != 0.0f) {
    if (!(options->damping > 0.0f) || !(options->damping < 1e30f)) return "options->damping must be > 0 and finite";
    out->damping = options->damping;
  }
  if (KILN_IK_HAS_(random_seed)) out->random_seed = options->random_seed;
  if (KILN_IK_HAS_(flags)) {
    if ((options->flags & ~kSolveFlags) != 0) {
      return "options->flags holds a bit this plugin does not define (known: KILN_IK_SOLVE_WARM_START)";
    }
    out->flags = options->flags;
  }
#undef KILN_IK_HAS_
  return nullptr;
}
#endif

// Counter-based generator: a pure function of (key, target, seed, restart, joint), as
// Philox/SplitMix-style generators are, so every thread draws its own numbers without state.
KILN_IK_HD uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 24 random bits (exact in float and double).
KILN_IK_HD float uniform01(uint64_t key, uint32_t target, uint32_t seed, uint32_t restart, uint32_t joint) {
  uint64_t h = mix64(key + 0x9e3779b97f4a7c15ull);
  h = mix64(h ^ (static_cast<uint64_t>(target) * 0xd1b54a32d192ed03ull));
  h = mix64(h ^ ((static_cast<uint64_t>(seed) << 32 | restart) * 0xaef17502108ef2d9ull));
  h = mix64(h ^ (static_cast<uint64_t>(joint) + 0x632be59bd9b4e019ull));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// Whether seed a beats seed b (converged first, then the smaller cost, then the lower index).
template <class T>
KILN_IK_HD bool better(bool a_converged, T a_cost, uint32_t a_index, bool b_converged, T b_cost, uint32_t b_index) {
  if (a_converged != b_converged) return a_converged;
  if (a_cost != b_cost) return a_cost < b_cost;
  return a_index < b_index;
}

}  // namespace kiln_ik
