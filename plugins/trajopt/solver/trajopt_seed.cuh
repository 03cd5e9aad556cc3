// kiln TrajOpt plugin: one (problem, seed) from its starting trajectory to convergence, and a
// problem's outputs from its best seed: the Levenberg-Marquardt loop and the finalisation both
// the kernels (trajopt_kernels.cuh) and the host path (trajopt_host.hpp) run.
//
// One step: assemble J^T J + lambda diag, factor, solve, project the positions into their limits,
// evaluate; accept when the cost went down (lambda / 3), else lambda * 5 and retry from the same
// linearisation. Stopping rule (kiln.trajopt/1, "Seeds and stopping"): after a step, the current
// trajectory meets the goal tolerances and every limit, and the step lowered the cost by less than
// KILN_TRAJOPT_COST_PLATEAU (a rejected step lowered it by nothing; a tracking problem, which has
// no tolerances, needs an accepted step); or max_iterations; or (device)
// another seed of the problem converged; or lambda ran away (stalled). A problem's best seed that
// ended outside a velocity or torque limit is then brought within them (bring_within_limits).
#pragma once

#include <stdint.h>

#include <cmath>

#include "trajopt_linear.cuh"
#include "trajopt_model.cuh"

namespace kiln_trajopt {

// Converged first, then within every limit, then the lower cost.
KILN_TRAJOPT_HD bool better(const SeedSummary &a, const SeedSummary &b) {
  if (a.finite != b.finite) return a.finite > b.finite;
  if (a.converged != b.converged) return a.converged > b.converged;
  if (a.within_limits() != b.within_limits()) return a.within_limits();
  return a.cost < b.cost;
}

// One (problem, seed)'s Levenberg-Marquardt iterate: x (its evaluation in eval[cur]), the buffer of
// a trial, the damping, whether the torque Jacobians are x's.
struct Iterate {
  float *x;
  float *trial;
  int cur;
  Eval e;
  float lambda;
  bool linearized;
};

KILN_TRAJOPT_HD SeedSummary summarize(const Eval &e, uint32_t iterations, bool converged) {
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

// A measurement knob (-DKILN_TRAJOPT_PHASE_CLOCKS, off in every shipped build): the nanoseconds
// (%globaltimer) block 0's lead thread spends in each phase of its steps, printed from the device
// when the steps end. What a batch-1 solve's time goes to.
struct PhaseClocks {
  enum Phase { kLinearize, kAssemble, kFactor, kSolve, kEvaluate, kCount };
#if defined(KILN_TRAJOPT_PHASE_CLOCKS) && defined(__CUDA_ARCH__)
  unsigned long long spent[kCount] = {}, last = now();
  __device__ static unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  __device__ void mark(Phase phase) {
    const unsigned long long t = now();
    spent[phase] += t - last;
    last = t;
  }
  __device__ void print(uint32_t steps) const {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      printf("kiln.trajopt phase ns over %u steps: linearize %llu assemble %llu factor %llu solve %llu evaluate %llu\n",
             steps, spent[kLinearize], spent[kAssemble], spent[kFactor], spent[kSolve], spent[kEvaluate]);
  }
#else
  KILN_TRAJOPT_HD void mark(Phase) {}
  KILN_TRAJOPT_HD void print(uint32_t) const {}
#endif
};

// Up to `budget` steps on `it` under settings s, until finished(evaluation, relative decrease of
// the step, whether it was accepted) holds (returns true), the damping ran away, or another seed of the problem converged
// (done: nullptr, or its flag, read each step). *steps counts the steps taken.
template <class Team, class Finished>
KILN_TRAJOPT_HD bool lm_steps(const Team &team, const KernelParams &p, const Settings &s, const ProblemView &v,
                              float *scratch, Real *band, uint32_t budget, const volatile uint32_t *done, Iterate &it,
                              uint32_t *steps, Finished finished) {
  float *eval[2] = {scratch + ScratchLayout::kEval, scratch + ScratchLayout::kEval + EvalLayout::kSize};
  float *jobs = scratch + ScratchLayout::kJobs, *dtau = scratch + ScratchLayout::kDtau;
  Real *rhs = band + kVars * kBand;
  PhaseClocks clocks;
  const uint32_t first = *steps;
  for (uint32_t n = 0; it.e.finite && n < budget; ++n) {
    if (done != nullptr && team.broadcast(team.rank() == 0 ? static_cast<float>(done[v.index]) : 0.0f) != 0.0f) break;
    if (!it.linearized) {
      linearize(team, it.x, v, eval[it.cur], jobs, dtau);
      it.linearized = true;
    }
    clocks.mark(PhaseClocks::kLinearize);
    assemble(team, v, s, eval[it.cur], dtau, it.lambda, band, rhs);
    clocks.mark(PhaseClocks::kAssemble);
    ++*steps;
    const bool factored = factor(team, band);
    clocks.mark(PhaseClocks::kFactor);
    if (!factored) {
      team.sync();
      it.lambda *= 10.0f;
      if (it.lambda > 1e10f) break;
      continue;
    }
    solve_factored(team, band, rhs);
    for (int i = team.rank(); i < kVars; i += team.size())
      it.trial[i] = project(p.limits, i % kDof, it.x[i] + static_cast<float>(rhs[i]));
    team.sync();
    clocks.mark(PhaseClocks::kSolve);
    const Eval t = evaluate(team, it.trial, v, p, s, eval[1 - it.cur]);
    clocks.mark(PhaseClocks::kEvaluate);
    float decrease = 0.0f;
    const bool accepted = t.finite && t.cost < it.e.cost;
    if (accepted) {
      decrease = (it.e.cost - t.cost) / it.e.cost;
      float *swap = it.x;
      it.x = it.trial, it.trial = swap;
      it.cur = 1 - it.cur;
      it.e = t;
      it.linearized = false;
      it.lambda = fmaxf(it.lambda * (1.0f / 3.0f), 1e-7f);
    } else {
      it.lambda *= 5.0f;
    }
    if (finished(it.e, decrease, accepted)) {
      clocks.print(*steps - first);
      return true;
    }
    if (it.lambda > 1e10f) break;
  }
  clocks.print(*steps - first);
  return false;
}

// The answer stays where the finalisation reads it (scratch's kX).
template <class Team>
KILN_TRAJOPT_HD void keep_in_place(const Team &team, float *scratch, const Iterate &it) {
  if (it.x == scratch + ScratchLayout::kX) return;
  for (int i = team.rank(); i < kVars; i += team.size()) scratch[ScratchLayout::kX + i] = it.x[i];
  team.sync();
}

// done: nullptr, or the problem's flag another seed sets when it converged (read each step).
template <class Team>
KILN_TRAJOPT_HD SeedSummary solve_seed(const Team &team, const KernelParams &p, uint32_t problem, uint32_t seed,
                                       const ProblemView &v, const Given &given, float *scratch, Real *band,
                                       const volatile uint32_t *done) {
  const Settings &s = p.settings;
  Iterate it{scratch + ScratchLayout::kX, scratch + ScratchLayout::kTrial, 0, Eval{}, kInitialDamping, false};
  start_trajectory(team, v, p, problem, seed, given, it.x);
  it.e = evaluate(team, it.x, v, p, s, scratch + ScratchLayout::kEval);
  uint32_t iterations = 0;
  const bool converged = lm_steps(team, p, s, v, scratch, band, s.max_iterations, done, it, &iterations,
                                  [&](const Eval &e, float decrease, bool accepted) {
                                    // A tracking problem has no tolerance to have met: a rejected
                                    // step (too little damping) says nothing about its plateau.
                                    return meets(e, s, v) && decrease < KILN_TRAJOPT_COST_PLATEAU &&
                                           (accepted || !v.track);
                                  });
  keep_in_place(team, scratch, it);
  return summarize(it.e, iterations, converged);
}

// The brake: from q_0 at qd_0, slowing at a constant rate to rest at knot N (projected into the
// position limits). What a controller falls back to when no trajectory towards the goal kept the
// limits; within them wherever the start velocity and the holding torques are.
template <class Team>
KILN_TRAJOPT_HD void brake_trajectory(const Team &team, const ProblemView &v, const Limits &lim, float *x) {
  for (int i = team.rank(); i < kVars; i += team.size()) {
    const int k = i / kDof + 1, j = i % kDof;
    const float travelled = v.qd0[j] * v.dt * (static_cast<float>(k) - 0.5f * k * (k + 1) / (kN + 1));
    x[i] = project(lim, j, v.q0[j] + travelled);
  }
  team.sync();
}

// The limit-first rounds (kiln.trajopt/1 "Within the limits"): from a seed that ended outside a
// velocity or torque limit (its trajectory at scratch's kX, *summary its summary), the goal's or
// the reference's weight lowered to 1 % and then to 0, max_iterations steps in all, until the
// trajectory keeps within 99 % of every limit (the margin keeps float rounding off the limits a
// double-precision check applies); failing that, the brake when it keeps the limits. (Measured on
// the iiwa14 with a joint goal 4 rad away in 0.32 s: 25 to 50 steps; a tenfold schedule of four
// rounds needed about twice as many.) The summary becomes the final trajectory's, not converged.
template <class Team>
KILN_TRAJOPT_HD void bring_within_limits(const Team &team, const KernelParams &p, const ProblemView &v, float *scratch,
                                         Real *band, SeedSummary *summary) {
  if (summary->converged || !summary->finite || summary->within_limits()) return;
  constexpr float kScales[] = {0.01f, 0.0f};
  constexpr int kRounds = sizeof kScales / sizeof kScales[0];
  constexpr float kUse = 0.99f;
  Settings s = p.settings;
  float *eval = scratch + ScratchLayout::kEval;
  Iterate it{scratch + ScratchLayout::kX, scratch + ScratchLayout::kTrial, 0, Eval{}, kInitialDamping, false};
  uint32_t steps = 0;
  const uint32_t per_round = s.max_iterations / kRounds > 0 ? s.max_iterations / kRounds : 1;
  for (int round = 0; round < kRounds; ++round) {
    s.goal_scale = kScales[round];
    it.e = evaluate(team, it.x, v, p, s, eval + it.cur * EvalLayout::kSize);
    it.linearized = false;
    it.lambda = kInitialDamping;
    if (it.e.finite && it.e.limit_use <= kUse) break;
    if (lm_steps(team, p, s, v, scratch, band, per_round, nullptr, it, &steps,
                 [&](const Eval &e, float, bool) { return e.limit_use <= kUse; }))
      break;
  }
  if (!(it.e.finite && it.e.limit_use <= 1.0f)) {
    brake_trajectory(team, v, p.limits, it.trial);
    const Eval brake = evaluate(team, it.trial, v, p, s, eval + (1 - it.cur) * EvalLayout::kSize);
    if (brake.finite && brake.limit_use <= kUse) {
      float *swap = it.x;
      it.x = it.trial, it.trial = swap;
      it.cur = 1 - it.cur;
    }
  }
  keep_in_place(team, scratch, it);
  const Eval final_eval = evaluate(team, scratch + ScratchLayout::kX, v, p, eval);
  *summary = summarize(final_eval, summary->iterations + steps, false);
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
    if (p.within_limits != nullptr) p.within_limits[problem] = ok && position <= 0.0f && velocity <= 0.0f && torque <= 0.0f;
  }
  team.sync();
}

// Seed 0's given trajectory of a problem: initial_trajectories, else the slot's last solution
// under KILN_TRAJOPT_SOLVE_WARM_START (advanced by one knot under KILN_TRAJOPT_SOLVE_WARM_SHIFT),
// else none.
KILN_TRAJOPT_HD Given given_trajectory(const KernelParams &p, uint32_t problem) {
  if (p.initial != nullptr) return {p.initial + size_t{problem} * kVars, false};
  const bool shift = (p.settings.flags & KILN_TRAJOPT_SOLVE_WARM_SHIFT) != 0;
  if ((p.warm_start || shift) && p.warm_q != nullptr && p.warm_valid[problem] != 0)
    return {p.warm_q + size_t{problem} * kVars, shift};
  return {nullptr, false};
}

}  // namespace kiln_trajopt
