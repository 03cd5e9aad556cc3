// kiln IK plugin: the batch solve on the device: one thread per target and seed, over one
// KernelParams (ik_params.hpp). Compiled by nvcc (ik_plugin.cu: solve_kernel, in the plugin) and
// by NVRTC (ik_kernels.cu: kiln_ik_solve_kernel, the split form's device images) from this one
// source; the host fallback of activate(-1) is ik_batch_host.hpp. The robot comes from the
// generated kiln_fk_chain.cuh of the translation unit.
//
// Device layout: one thread per (target, seed); the seeds of a target are `group` (the seed count
// rounded up to a power of two, <= 32) adjacent lanes of one warp, so the lockstep stop ("one seed
// converged") is a ballot and the best-seed choice a butterfly of shuffles: no shared or global
// scratch per seed. Both paths read a slot's last solution where asked (warm start) and record the
// answer there.
#pragma once

#if !defined(__CUDACC_RTC__)  // NVRTC has no runtime header and needs none
#include <cuda_runtime.h>
#endif

#include <stdint.h>

#include <cmath>
#include <cstddef>

#include "ik_core.cuh"
#include "ik_params.hpp"
#include "kiln/ext/ik.h"
#include "kiln_fk_chain.cuh"

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// The kernel body; the nvcc form wraps it as solve_kernel, ik_kernels.cu (NVRTC) as kiln_ik_solve_kernel.
__device__ __forceinline__ void solve_batch(const KernelParams &p) {
  const uint32_t thread = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t group = 1u << p.group_shift;
  const uint32_t target = thread >> p.group_shift;
  const uint32_t seed = thread & (group - 1);
  const uint32_t lane = threadIdx.x & 31u;
  const unsigned group_mask = group == 32 ? kFullMask : (((1u << group) - 1u) << (lane & ~(group - 1u)));
  const bool in_batch = target < p.count;

  // The slot's last solution and its flag are loaded together with the target, before the best seed
  // overwrites them below: where the arrays are in host memory (ik_solver.hpp), one trip over the
  // bus instead of three in a row.
  const float *slot = p.initial_q == nullptr && p.warm_start && in_batch ? p.warm_q + size_t{target} * kDof : nullptr;
  float warm[kDof];
  uint8_t warm_valid = 0;
  if (slot != nullptr) {
    warm_valid = p.warm_valid[target];
    for (int j = 0; j < kDof; ++j) warm[j] = slot[j];
  }
  kiln_ik::Target<float> goal{};
  const bool valid = in_batch && kiln_ik::make_target(p.targets + size_t{target} * KILN_IK_POSE_SIZE, goal);
  const bool active = valid && seed < p.seeds;
  const float *initial = (p.initial_q != nullptr && in_batch) ? p.initial_q + size_t{target} * kDof : nullptr;
  if (slot != nullptr && warm_valid != 0) initial = warm;

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
    float answer[kDof];  // written to both places from registers (never read back from host memory)
    for (int j = 0; j < kDof; ++j) answer[j] = s.q[j] + (j == kDof - 1 ? kFaultOffset : 0.0f);
    float *q = p.q + size_t{target} * kDof;
    for (int j = 0; j < kDof; ++j) q[j] = answer[j];
    if (p.warm_q != nullptr) {
      float *last = p.warm_q + size_t{target} * kDof;
      for (int j = 0; j < kDof; ++j) last[j] = answer[j];
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

#if !defined(__CUDACC_RTC__)
__global__ void __launch_bounds__(kBlock) solve_kernel(const KernelParams p) { solve_batch(p); }
#endif

}  // namespace
