// kiln TrajOpt plugin: the two kernels of a batch solve (nvcc only).
//   seed_kernel      one block of kBlock threads per (problem, seed); dynamic shared memory holds
//                    the band being factored (kBandReals doubles) and the team's reduction floats. A seed
//                    that converged raises its problem's done flag, which the others poll per step.
//   finalize_kernel  one block per problem: the best seed's trajectory, velocities, torques and
//                    violations into the outputs, the slot's last solution; clears the done flag.
#pragma once

#include <cuda_runtime.h>

#include "trajopt_seed.cuh"
#include "trajopt_team.cuh"

namespace kiln_trajopt {

constexpr size_t kSeedSharedBytes = kBandReals * sizeof(Real) + 32 * sizeof(float);
constexpr unsigned kFinalizeBlock = 64;

__global__ void __launch_bounds__(kBlock) seed_kernel(const KernelParams p) {
  extern __shared__ Real shared[];
  const uint32_t problem = blockIdx.x / p.seeds, seed = blockIdx.x % p.seeds;
  if (problem >= p.count) return;
  const BlockTeam team{reinterpret_cast<float *>(shared + kBandReals)};
  const ProblemView v = load_problem(p, problem);
  float *scratch = p.scratch + (size_t{problem} * p.seeds + seed) * ScratchLayout::kSize;
  const SeedSummary out = solve_seed(team, p, problem, seed, v, given_trajectory(p, problem), scratch, shared, p.done);
  if (threadIdx.x == 0) {
    p.summaries[size_t{problem} * p.seeds + seed] = out;
    if (out.converged) atomicExch(p.done + problem, 1u);
  }
}

__global__ void __launch_bounds__(kFinalizeBlock) finalize_kernel(const KernelParams p) {
  __shared__ float reduce[32];
  const uint32_t problem = blockIdx.x;
  if (problem >= p.count) return;
  const BlockTeam team{reduce};
  const ProblemView v = load_problem(p, problem);
  const SeedSummary *summaries = p.summaries + size_t{problem} * p.seeds;
  uint32_t best = 0;
  for (uint32_t s = 1; s < p.seeds; ++s)
    if (better(summaries[s], summaries[best])) best = s;
  const float *x = p.scratch + (size_t{problem} * p.seeds + best) * ScratchLayout::kSize + ScratchLayout::kX;
  finalize_problem(team, p, problem, v, summaries[best], x);
  if (threadIdx.x == 0) p.done[problem] = 0;
}

}  // namespace kiln_trajopt
