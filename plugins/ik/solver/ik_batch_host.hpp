// kiln IK plugin: the batch solve on the host (activate(-1)): the same algorithm as the kernel
// (ik_batch.cuh), seeds in lockstep per target, then the best. Plain C++ (no CUDA header), so both
// forms use it: the nvcc plugin (ik_plugin.cu) and the split form's host part (ik_split_plugin.cpp).
#pragma once

#include <stdint.h>

#include <cstddef>

#include "ik_core.cuh"
#include "ik_params.hpp"
#include "kiln/ext/ik.h"

namespace {

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
