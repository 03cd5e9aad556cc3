// kiln IK plugin: the batch solve, on the device (solve_kernel: one thread per target and seed)
// and on the host (solve_host, for activate(-1)), over one KernelParams. Part of ik_plugin.cu,
// which includes it once (an anonymous namespace, like the plugin's own code); the robot comes from
// the generated kiln_fk_chain.cuh of that translation unit.
//
// Device layout: one thread per (target, seed); the seeds of a target are `group` (the seed count
// rounded up to a power of two, <= 32) adjacent lanes of one warp, so the lockstep stop ("one seed
// converged") is a ballot and the best-seed choice a butterfly of shuffles: no shared or global
// scratch per seed. Both paths read a slot's last solution where asked (warm start) and record the
// answer there.
#pragma once

#include <cuda_runtime.h>

#include <stdint.h>

#include <cmath>
#include <cstddef>

#include "ik_core.cuh"
#include "kiln/ext/ik.h"
#include "kiln_fk_chain.cuh"

namespace {

using Chain = kiln_fk::Chain;
constexpr int kDof = Chain::kDof;
static_assert(kDof >= 1 && kDof <= 32, "the solver handles chains of 1 to 32 joints");
using FloatLimits = kiln_ik::Limits<float, kDof>;

constexpr unsigned kBlock = 128;                 // threads per block (4 warps)
constexpr unsigned kFullMask = 0xffffffffu;
#ifdef KILN_IK_FAULT_WRONG_ANSWERS
// Deliberately broken: the answer's last joint is moved after the solve, while the errors and the
// converged flag reported are those of the unmoved answer, as a solver bug would report them.
constexpr float kFaultOffset = 0.05f;
#else
constexpr float kFaultOffset = 0.0f;
#endif

struct KernelParams {
  uint32_t count;
  uint32_t seeds;
  uint32_t group_shift;  // log2 of the lanes per target
  kiln_ik::Settings settings;
  FloatLimits limits;
  const float *targets;
  const float *initial_q;  // nullptr: seed 0 from the middle of the ranges
  float *q;
  float *position_error;     // may be nullptr (device memory mode)
  float *orientation_error;  // may be nullptr
  uint8_t *converged;        // may be nullptr
  uint32_t *iterations;      // may be nullptr
  // The slots' last solutions (max_batch * kDof floats, max_batch flags). nullptr: neither read
  // nor recorded (the self-test, the warm-up launch).
  float *warm_q;
  uint8_t *warm_valid;
  bool warm_start;  // seed 0 from warm_q where the slot is valid and initial_q is nullptr
};

uint32_t group_shift_for(uint32_t seeds) {
  uint32_t shift = 0;
  while ((1u << shift) < seeds) ++shift;
  return shift;
}

__global__ void __launch_bounds__(kBlock) solve_kernel(const KernelParams p) {
  const uint32_t thread = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t group = 1u << p.group_shift;
  const uint32_t target = thread >> p.group_shift;
  const uint32_t seed = thread & (group - 1);
  const uint32_t lane = threadIdx.x & 31u;
  const unsigned group_mask = group == 32 ? kFullMask : (((1u << group) - 1u) << (lane & ~(group - 1u)));
  const bool in_batch = target < p.count;

  kiln_ik::Target<float> goal{};
  const bool valid = in_batch && kiln_ik::make_target(p.targets + size_t{target} * KILN_IK_POSE_SIZE, goal);
  const bool active = valid && seed < p.seeds;
  const float *initial = (p.initial_q != nullptr && in_batch) ? p.initial_q + size_t{target} * kDof : nullptr;
  if (initial == nullptr && p.warm_start && in_batch && p.warm_valid[target] != 0) {
    initial = p.warm_q + size_t{target} * kDof;  // read here, before the best seed overwrites it below
  }

  kiln_ik::Seed<Chain, float> s;
  if (active) {
    kiln_ik::restart_seed(s, goal, p.limits, initial, p.settings, target, seed, 0);
  } else {
    s.converged = false;
    s.cost = INFINITY;
  }
  bool stopped = !active;
  uint32_t iterations = 0;
  for (uint32_t it = 0; it < p.settings.max_iterations; ++it) {
    const unsigned converged_lanes = __ballot_sync(kFullMask, active && s.converged);
    if (converged_lanes & group_mask) stopped = true;
    if (__all_sync(kFullMask, stopped)) break;
    if (!stopped) {
      kiln_ik::iterate(s, goal, p.limits, p.settings, target, seed);
      iterations = it + 1;
    }
  }

  // Best seed of the target: a butterfly over the group's lanes.
  bool best_converged = active && s.converged;
  float best_cost = active ? s.cost : INFINITY;
  uint32_t best_seed = active ? seed : 0xffffffffu;
  for (uint32_t offset = group >> 1; offset > 0; offset >>= 1) {
    const bool other_converged = __shfl_xor_sync(kFullMask, best_converged ? 1 : 0, static_cast<int>(offset)) != 0;
    const float other_cost = __shfl_xor_sync(kFullMask, best_cost, static_cast<int>(offset));
    const uint32_t other_seed = __shfl_xor_sync(kFullMask, best_seed, static_cast<int>(offset));
    if (kiln_ik::better(other_converged, other_cost, other_seed, best_converged, best_cost, best_seed)) {
      best_converged = other_converged;
      best_cost = other_cost;
      best_seed = other_seed;
    }
  }
  if (!in_batch) return;
  if (active && seed == best_seed) {
    float *q = p.q + size_t{target} * kDof;
    for (int j = 0; j < kDof; ++j) q[j] = s.q[j] + (j == kDof - 1 ? kFaultOffset : 0.0f);
    if (p.warm_q != nullptr) {
      float *warm = p.warm_q + size_t{target} * kDof;
      for (int j = 0; j < kDof; ++j) warm[j] = q[j];
      p.warm_valid[target] = 1;
    }
    if (p.position_error != nullptr) p.position_error[target] = s.position_error;
    if (p.orientation_error != nullptr) p.orientation_error[target] = s.orientation_error;
    if (p.converged != nullptr) p.converged[target] = s.converged ? 1 : 0;
    if (p.iterations != nullptr) p.iterations[target] = iterations;
  } else if (!valid && seed == 0) {
    // A zero or non-finite target: seed 0's starting point, NaN errors, not converged.
    float q0[kDof];
    kiln_ik::starting_point(p.limits, initial, p.settings.random_seed, target, 0, 0, q0);
    float *q = p.q + size_t{target} * kDof;
    for (int j = 0; j < kDof; ++j) q[j] = q0[j];
    if (p.position_error != nullptr) p.position_error[target] = __int_as_float(0x7fc00000);
    if (p.orientation_error != nullptr) p.orientation_error[target] = __int_as_float(0x7fc00000);
    if (p.converged != nullptr) p.converged[target] = 0;
    if (p.iterations != nullptr) p.iterations[target] = 0;
  }
}

// The same algorithm on the host (activate(-1)): seeds in lockstep per target, then the best.
void solve_host(const KernelParams &p) {
  kiln_ik::Seed<Chain, float> seeds[KILN_IK_MAX_SEEDS];
  for (uint32_t target = 0; target < p.count; ++target) {
    kiln_ik::Target<float> goal{};
    const bool valid = kiln_ik::make_target(p.targets + size_t{target} * KILN_IK_POSE_SIZE, goal);
    (void)valid;  // host-memory targets were validated by solve_async
    const float *initial = p.initial_q != nullptr ? p.initial_q + size_t{target} * kDof : nullptr;
    if (initial == nullptr && p.warm_start && p.warm_valid[target] != 0) initial = p.warm_q + size_t{target} * kDof;
    for (uint32_t k = 0; k < p.seeds; ++k) kiln_ik::restart_seed(seeds[k], goal, p.limits, initial, p.settings, target, k, 0);
    uint32_t iterations = 0;
    for (uint32_t it = 0; it < p.settings.max_iterations; ++it) {
      bool any = false;
      for (uint32_t k = 0; k < p.seeds; ++k) any = any || seeds[k].converged;
      if (any) break;
      for (uint32_t k = 0; k < p.seeds; ++k) kiln_ik::iterate(seeds[k], goal, p.limits, p.settings, target, k);
      iterations = it + 1;
    }
    uint32_t best = 0;
    for (uint32_t k = 1; k < p.seeds; ++k) {
      if (kiln_ik::better(seeds[k].converged, seeds[k].cost, k, seeds[best].converged, seeds[best].cost, best)) best = k;
    }
    const kiln_ik::Seed<Chain, float> &s = seeds[best];
    float *q = p.q + size_t{target} * kDof;
    for (int j = 0; j < kDof; ++j) q[j] = s.q[j] + (j == kDof - 1 ? kFaultOffset : 0.0f);
    if (p.warm_q != nullptr) {
      for (int j = 0; j < kDof; ++j) p.warm_q[size_t{target} * kDof + j] = q[j];
      p.warm_valid[target] = 1;
    }
    p.position_error[target] = s.position_error;
    p.orientation_error[target] = s.orientation_error;
    p.converged[target] = s.converged ? 1 : 0;
    p.iterations[target] = iterations;
  }
}

}  // namespace
