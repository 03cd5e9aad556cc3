// kiln TrajOpt plugin: one (problem, seed) from its starting trajectory to convergence, and a
// problem's outputs from its best seed: the Levenberg-Marquardt loop and the finalisation both
// the kernels (trajopt_kernels.cuh) and the host path (trajopt_host.hpp) run.
//
// One step: assemble J^T J + lambda diag, factor, solve, project the positions into their limits,
// evaluate; accept when the cost went down (lambda / 3), else lambda * 5 and retry from the same
// linearisation. Stopping rule (kiln.trajopt/1, "Seeds and stopping"): after a step, the current
// trajectory meets the goal tolerances and every limit, and the step lowered the cost by less than
// KILN_TRAJOPT_COST_PLATEAU (a rejected step lowered it by nothing); or max_iterations; or (device)
// another seed of the problem converged; or lambda ran away (stalled).
#pragma once

#include <stdint.h>

#include <cmath>

#include "trajopt_linear.cuh"
#include "trajopt_model.cuh"

namespace kiln_trajopt {

KILN_TRAJOPT_HD bool better(const SeedSummary &a, const SeedSummary &b) {
  if (a.finite != b.finite) return a.finite > b.finite;
  if (a.converged != b.converged) return a.converged > b.converged;
  return a.cost < b.cost;
}

// done: nullptr, or the problem's flag another seed sets when it converged (read each step).
template <class Team>
KILN_TRAJOPT_HD SeedSummary solve_seed(const Team &team, const KernelParams &p, uint32_t problem, uint32_t seed,
                                       const ProblemView &v, const float *given, float *scratch, Real *band,
                                       const volatile uint32_t *done) {
  const Settings &s = p.settings;
  float *x = scratch + ScratchLayout::kX, *trial = scratch + ScratchLayout::kTrial;
  float *eval[2] = {scratch + ScratchLayout::kEval, scratch + ScratchLayout::kEval + EvalLayout::kSize};
  float *jobs = scratch + ScratchLayout::kJobs, *dtau = scratch + ScratchLayout::kDtau;
  Real *rhs = band + kVars * kBand;
  start_trajectory(team, v, p, problem, seed, given, x);
  int cur = 0;
  Eval e = evaluate(team, x, v, p, eval[cur]);
  uint32_t iterations = 0;
  bool converged = false, linearized = false;
  float lambda = kInitialDamping;
  for (uint32_t it = 0; e.finite && it < s.max_iterations; ++it) {
    if (done != nullptr && team.broadcast(team.rank() == 0 ? static_cast<float>(done[problem]) : 0.0f) != 0.0f) break;
    if (!linearized) {
      linearize(team, x, v, eval[cur], jobs, dtau);
      linearized = true;
    }
    assemble(team, v, s, eval[cur], dtau, lambda, band, rhs);
    ++iterations;
    if (!factor(team, band)) {
      team.sync();
      lambda *= 10.0f;
      if (lambda > 1e10f) break;
      continue;
    }
    solve_factored(team, band, rhs);
    for (int i = team.rank(); i < kVars; i += team.size()) trial[i] = project(p.limits, i % kDof, x[i] + static_cast<float>(rhs[i]));
    team.sync();
    const Eval t = evaluate(team, trial, v, p, eval[1 - cur]);
    float decrease = 0.0f;
    if (t.finite && t.cost < e.cost) {
      decrease = (e.cost - t.cost) / e.cost;
      float *swap = x;
      x = trial, trial = swap;
      cur = 1 - cur;
      e = t;
      linearized = false;
      lambda = fmaxf(lambda * (1.0f / 3.0f), 1e-7f);
    } else {
      lambda *= 5.0f;
    }
    if (meets(e, s) && decrease < KILN_TRAJOPT_COST_PLATEAU) {
      converged = true;
      break;
    }
    if (lambda > 1e10f) break;
  }
  if (x != scratch + ScratchLayout::kX) {  // the answer stays where the finalisation reads it
    for (int i = team.rank(); i < kVars; i += team.size()) scratch[ScratchLayout::kX + i] = x[i];
    team.sync();
  }
  SeedSummary out;
  out.cost = e.cost;
  out.position_error = e.finite ? e.position_error : NAN;
  out.orientation_error = e.finite ? e.orientation_error : NAN;
  out.velocity_violation = e.finite ? e.velocity_violation : NAN;
  out.torque_violation = e.finite ? e.torque_violation : NAN;
  out.iterations = iterations;
  out.converged = converged ? 1u : 0u;
  out.finite = e.finite ? 1u : 0u;
  return out;
}

// Problem `problem`'s outputs from trajectory x (q_1..q_N) and its seed's summary; records the slot.
template <class Team>
KILN_TRAJOPT_HD void finalize_problem(const Team &team, const KernelParams &p, uint32_t problem, const ProblemView &v,
                                      const SeedSummary &best, const float *x) {
  const Limits &lim = p.limits;
  float position = 0.0f, velocity = 0.0f, torque = 0.0f;
  const size_t base = size_t{problem} * kKnots * kDof;
  for (int k = team.rank(); k <= kN; k += team.size()) {
    float q[kDof], qd[kDof], qdd[kDof], tau[kDof];
    knot_state(x, v, k, q, qd, qdd);
    Dyn::rnea(q, qd, qdd, tau);
    for (int j = 0; j < kDof; ++j) {
      const size_t at = base + static_cast<size_t>(k) * kDof + j;
      p.q[at] = q[j];
      if (p.qd != nullptr) p.qd[at] = qd[j];
      if (p.torques != nullptr) p.torques[at] = tau[j];
      if (lim.position_limited[j]) position = fmaxf(position, fmaxf(lim.true_lower[j] - q[j], q[j] - lim.true_upper[j]));
      if (k > 0 && lim.velocity[j] > 0.0f) velocity = fmaxf(velocity, fabsf(qd[j]) - lim.velocity[j]);
      if (lim.effort[j] > 0.0f) torque = fmaxf(torque, fabsf(tau[j]) - lim.effort[j]);
    }
  }
  position = team.max(position), velocity = team.max(velocity), torque = team.max(torque);
  if (p.warm_q != nullptr && best.finite) {
    for (int i = team.rank(); i < kVars; i += team.size()) p.warm_q[size_t{problem} * kVars + i] = x[i];
  }
  if (team.rank() == 0) {
    const bool ok = best.finite != 0;
    if (p.warm_valid != nullptr && ok) p.warm_valid[problem] = 1;
    if (p.converged != nullptr) p.converged[problem] = best.converged ? 1 : 0;
    if (p.position_error != nullptr) p.position_error[problem] = best.position_error;
    if (p.orientation_error != nullptr) p.orientation_error[problem] = best.orientation_error;
    if (p.position_violation != nullptr) p.position_violation[problem] = ok ? position : NAN;
    if (p.velocity_violation != nullptr) p.velocity_violation[problem] = ok ? velocity : NAN;
    if (p.torque_violation != nullptr) p.torque_violation[problem] = ok ? torque : NAN;
    if (p.cost != nullptr) p.cost[problem] = best.cost;
    if (p.iterations != nullptr) p.iterations[problem] = best.iterations;
  }
  team.sync();
}

// Seed 0's given trajectory of a problem: initial_trajectories, else the slot's last solution
// under KILN_TRAJOPT_SOLVE_WARM_START, else none.
KILN_TRAJOPT_HD const float *given_trajectory(const KernelParams &p, uint32_t problem) {
  if (p.initial != nullptr) return p.initial + size_t{problem} * kVars;
  if (p.warm_start && p.warm_q != nullptr && p.warm_valid[problem] != 0) return p.warm_q + size_t{problem} * kVars;
  return nullptr;
}

}  // namespace kiln_trajopt
