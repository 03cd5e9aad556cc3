// kiln TrajOpt plugin: the batch solve on the host (activate(-1)): the kernels' code
// (trajopt_seed.cuh) run by a SerialTeam, seeds one after another until one converged, the best
// kept (and brought within the limits where it is not). Plain C++: the host-only form of the plugin (no CUDA) compiles it too.
#pragma once

#include <stdint.h>

#include <cstring>

#include "trajopt_seed.cuh"
#include "trajopt_team.cuh"

namespace kiln_trajopt {

// scratch: ScratchLayout::kSize floats, band: kBandReals, best: kVars floats (all reserved at activate).
inline void solve_host(const KernelParams &p, float *scratch, Real *band, float *best) {
  const SerialTeam team;
  for (uint32_t problem = 0; problem < p.count; ++problem) {
    const ProblemView v = load_problem(p, problem);
    const Given given = given_trajectory(p, problem);
    // The slot's solution is read by seed 0 before finalize_problem records the new one.
    SeedSummary chosen{};
    for (uint32_t seed = 0; seed < p.seeds; ++seed) {
      const SeedSummary out = solve_seed(team, p, problem, seed, v, given, scratch, band, nullptr);
      if (seed == 0 || better(out, chosen)) {
        chosen = out;
        std::memcpy(best, scratch + ScratchLayout::kX, sizeof(float) * kVars);
      }
      if (out.converged) break;
    }
    if (!chosen.converged && chosen.finite && !chosen.within_limits()) {
      std::memcpy(scratch + ScratchLayout::kX, best, sizeof(float) * kVars);
      bring_within_limits(team, p, v, scratch, band, &chosen);
      std::memcpy(best, scratch + ScratchLayout::kX, sizeof(float) * kVars);
    }
    finalize_problem(team, p, problem, v, chosen, best);
  }
}

}  // namespace kiln_trajopt
