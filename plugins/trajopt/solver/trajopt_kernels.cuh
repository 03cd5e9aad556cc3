// kiln TrajOpt plugin: the two kernels of a batch solve (nvcc only).
//   seed_kernel      one block per (problem, seed) (128 threads, or 256 where the launch has at most
//                    a block per SM); dynamic shared memory holds the band being factored
//                    (kBandReals) and the team's reduction floats. Launched
//                    twice: seed 0 of every problem, then seeds 1.. of every problem, whose blocks
//                    return at once where seed 0 converged (so a batch that seed 0 solves costs one
//                    wave of blocks, not seeds of them); a seed that converged raises its problem's
//                    done flag, which the seeds running beside it poll per step.
//                    Launched a third time with limits_pass set, one block per problem: the
//                    problem's best seed, when it ended not converged and outside a velocity or
//                    torque limit, brought within them (trajopt_seed.cuh bring_within_limits); the
//                    blocks of every other problem return at once. (One instantiation serves both:
//                    the limits pass is the same Levenberg-Marquardt code.) With one seed a problem
//                    there is no third launch: each block runs its problem's limits pass when its
//                    seed ends, a kernel fewer on a batch-1 solve's path.
//   finalize_kernel  one block per problem, a thread per knot: the best seed's trajectory,
//                    velocities, torques and violations into the outputs, the slot's last solution;
//                    clears the done flag.
#pragma once

#include <cuda_runtime.h>

#include "trajopt_seed.cuh"
#include "trajopt_team.cuh"

namespace kiln_trajopt {

constexpr size_t kSeedSharedBytes = kBandReals * sizeof(Real) + 32 * sizeof(float);
// A thread per knot (rounded up to whole warps): the knots' RNEAs in one round, which is on a
// batch-1 solve's critical path.
constexpr unsigned kFinalizeBlock = (kKnots + 31) / 32 * 32;

KILN_TRAJOPT_HD uint32_t best_seed(const KernelParams &p, uint32_t problem) {
  const SeedSummary *summaries = p.summaries + size_t{problem} * p.seeds;
  uint32_t best = 0;
  for (uint32_t s = 1; s < p.seeds; ++s)
    if (better(summaries[s], summaries[best])) best = s;
  return best;
}

// The limits pass of the seed kernel (one block per problem): the problem's best seed, when it ended
// not converged and outside a velocity or torque limit, brought within them.
__device__ void best_within_limits(const KernelParams &p, Real *shared) {
  const uint32_t problem = blockIdx.x;
  const uint32_t best = best_seed(p, problem);  // every thread reads the same summaries
  SeedSummary *summary = p.summaries + size_t{problem} * p.seeds + best;
  if (summary->converged || !summary->finite || summary->within_limits()) return;
  const BlockTeam team{reinterpret_cast<float *>(shared + kBandReals)};
  const ProblemView v = load_problem(p, problem);
  SeedSummary updated = *summary;
  team.sync();
  bring_within_limits(team, p, v, p.scratch + (size_t{problem} * p.seeds + best) * ScratchLayout::kSize, shared,
                      &updated);
  if (threadIdx.x == 0) *summary = updated;
}

// Threads per block and the blocks per SM the compiler must fit (so, registers per thread):
// plugins/trajopt/README.md "GPU layout" gives the measured choice among the instantiations the plugin carries.
template <int Threads, int MinBlocks>
__global__ void __launch_bounds__(Threads, MinBlocks) seed_kernel(const KernelParams p) {
  extern __shared__ Real shared[];
  if (p.limits_pass) {
    if (blockIdx.x < p.count) best_within_limits(p, shared);
    return;
  }
  const uint32_t problem = blockIdx.x / p.seed_span, seed = p.seed_base + blockIdx.x % p.seed_span;
  if (problem >= p.count || seed >= p.seeds) return;
  const BlockTeam team{reinterpret_cast<float *>(shared + kBandReals)};  // (any block size: strided loops)
  if (seed > 0 && team.broadcast(threadIdx.x == 0 ? static_cast<float>(*(volatile uint32_t *)(p.done + problem)) : 0.0f) != 0.0f) {
    if (threadIdx.x == 0) {  // not run: never the best
      SeedSummary none{};
      none.cost = INFINITY;
      p.summaries[size_t{problem} * p.seeds + seed] = none;
    }
    return;
  }
  const ProblemView v = load_problem(p, problem);
  float *scratch = p.scratch + (size_t{problem} * p.seeds + seed) * ScratchLayout::kSize;
  const SeedSummary out = solve_seed(team, p, problem, seed, v, given_trajectory(p, problem), scratch, shared, p.done);
  if (threadIdx.x == 0) {
    p.summaries[size_t{problem} * p.seeds + seed] = out;
    if (out.converged) atomicExch(p.done + problem, 1u);
  }
  if (p.seeds == 1) {  // one seed: this block's is the problem's best (blockIdx.x == problem)
    team.sync();
    best_within_limits(p, shared);
  }
}

__global__ void __launch_bounds__(kFinalizeBlock) finalize_kernel(const KernelParams p) {
  __shared__ float reduce[32];
  const uint32_t problem = blockIdx.x;
  if (problem >= p.count) return;
  const BlockTeam team{reduce};
  const ProblemView v = load_problem(p, problem);
  const SeedSummary *summaries = p.summaries + size_t{problem} * p.seeds;
  const uint32_t best = best_seed(p, problem);
  const float *x = p.scratch + (size_t{problem} * p.seeds + best) * ScratchLayout::kSize + ScratchLayout::kX;
  finalize_problem(team, p, problem, v, summaries[best], x);
  if (threadIdx.x == 0) p.done[problem] = 0;
}

}  // namespace kiln_trajopt
