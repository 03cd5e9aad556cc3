// kiln TrajOpt plugin: the Gauss-Newton linear algebra of one (problem, seed), team-parallel:
//   linearize  the torque Jacobians of every knot: forward differences of the generated RNEA in q
//              and qd, the mass matrix (exact: tau is linear in qdd) as RNEA columns; per knot and
//              slot the 7x7 d tau / d q_slot;
//   assemble   the damped normal matrix J^T J + lambda diag(J^T J) straight into band storage
//              (row i holds columns i..i+kBand-1) and -J^T r, each entry gathered from the <= 3
//              knots that touch it (no atomics, deterministic); a goal's terms at knot N, a
//              tracking problem's at every knot (each depends on its own knot's q only);
//   factor     banded LDL^T, on the lead warp (one warp barrier per row);
//   solve      the two triangular solves on the lead warp.
// The normal matrix is assembled, factored and solved in Real (trajopt_params.hpp: float; double
// with -DKILN_TRAJOPT_DOUBLE_FACTOR, at twice the shared memory); residuals and Jacobians are float.
#pragma once

#include <cmath>

#include "trajopt_model.cuh"

namespace kiln_trajopt {

template <class Team>
KILN_TRAJOPT_HD void linearize(const Team &team, const float *x, const ProblemView &v, const float *eval, float *jobs,
                               float *dtau) {
  for (int idx = team.rank(); idx < kKnots * kFdJobs; idx += team.size()) {
    const int k = idx / kFdJobs, c = idx % kFdJobs;
    float q[kDof], qd[kDof], qdd[kDof];
    knot_state(x, v, k, q, qd, qdd);
    float *out = jobs + idx * kDof;
    if (c < kDof) {
      q[c] += kFdStep;
      Dyn::rnea(q, qd, qdd, out);
    } else if (c < 2 * kDof) {
      qd[c - kDof] += kFdStep;
      Dyn::rnea(q, qd, qdd, out);
    } else {
      const float zero_g[3] = {0.0f, 0.0f, 0.0f};
      for (int j = 0; j < kDof; ++j) qd[j] = 0.0f, qdd[j] = j == c - 2 * kDof ? 1.0f : 0.0f;
      Dyn::rnea(q, qd, qdd, zero_g, out);
    }
  }
  team.sync();
  const float inv_dt = 1.0f / v.dt, inv_dt2 = inv_dt * inv_dt, inv_h = 1.0f / kFdStep;
  for (int idx = team.rank(); idx < kKnots * 3 * kDof; idx += team.size()) {
    const int k = idx / (3 * kDof), slot = (idx / kDof) % 3, col = idx % kDof;
    const float *tau = eval + EvalLayout::kTau + k * kDof;
    const float *tq = jobs + (k * kFdJobs + col) * kDof, *tv = jobs + (k * kFdJobs + kDof + col) * kDof;
    const float *m = jobs + (k * kFdJobs + 2 * kDof + col) * kDof;
    const float mass = k < kN ? (slot == 1 ? -2.0f : 1.0f) * inv_dt2 : 0.0f;
    float *out = dtau + ((k * 3 + slot) * kDof + col) * kDof;
    for (int j = 0; j < kDof; ++j) {
      const float dq = (tq[j] - tau[j]) * inv_h, dv = (tv[j] - tau[j]) * inv_h;
      out[j] = mass * m[j] + (slot == 1 ? dq + dv * inv_dt : (slot == 0 ? -dv * inv_dt : 0.0f));
    }
  }
  team.sync();
}

// d tau_k / d q_slot column `col` (dof floats).
KILN_TRAJOPT_HD const float *dtau_column(const float *dtau, int k, int slot, int col) {
  return dtau + ((k * 3 + slot) * kDof + col) * kDof;
}

// band[i * kBand + d] = (J^T J)(i, i + d) (+ lambda * that on the diagonal); rhs = -J^T r.
// A member a row: row i (knot block b, dof a) meets the columns of blocks b..b + 2 through knots
// b..b + 2 (knot k couples the blocks k - 2..k), so the member loads each knot's column of row i
// once, weighted, and sums the row's kBand columns from there (value[t]: column b * dof + t, the
// loops unrolled so that t is a compile-time index), each entry's terms in knot order.
template <class Team>
KILN_TRAJOPT_HD void assemble(const Team &team, const ProblemView &v, const Settings &s, const float *eval,
                              const float *dtau, float lambda, Real *band, Real *rhs) {
  const float *fields = eval + EvalLayout::kKnotFields;
  const float *rg = eval + EvalLayout::kGoal, *Jg = rg + kGoalRows;
  const float *track = eval + EvalLayout::kTrack;  // knot k's residual at k * kTrackStride, its Jacobian after
  const SlotCoefficients slots(v, s.smoothness_weight);
  for (int i = team.rank(); i < kVars; i += team.size()) {
    const int b = i / kDof, a = i % kDof;
    Real value[kBand];
    KILN_TRAJOPT_UNROLL
    for (int t = 0; t < kBand; ++t) value[t] = 0;
    KILN_TRAJOPT_UNROLL
    for (int s1 = 2; s1 >= 0; --s1) {  // knot k = b + 2 - s1, row i's slot in it s1
      const int k = b + 2 - s1;
      if (k > kN) break;
      const float *f = fields + k * 5 * kDof;
      const float *c1 = dtau_column(dtau, k, s1, a);
      Real w[kDof];
      KILN_TRAJOPT_UNROLL
      for (int j = 0; j < kDof; ++j) w[j] = Real(c1[j]) * f[j];
      KILN_TRAJOPT_UNROLL
      for (int o = 0; o <= 2 - s1; ++o) {  // the column block b + o, its slot in knot k
        const int s2 = o + s1;
        KILN_TRAJOPT_UNROLL
        for (int a2 = 0; a2 < kDof; ++a2) {
          Real &e = value[o * kDof + a2];
          const float *c2 = dtau_column(dtau, k, s2, a2);
          KILN_TRAJOPT_UNROLL
          for (int j = 0; j < kDof; ++j) e += w[j] * c2[j];
          if (a == a2) e += Real(slots.alpha(k, s1)) * slots.alpha(k, s2) + Real(slots.beta(k, s1)) * slots.beta(k, s2) * f[2 * kDof + a];
          if (s1 == 1 && s2 == 1 && v.track) {
            const float *Jt = track + k * kTrackStride + kTrackRows;
            for (int r = 0; r < kTrackRows; ++r) e += Real(Jt[r * kDof + a]) * Jt[r * kDof + a2];
          } else if (k == kN && s1 == 1 && s2 == 1) {
            for (int r = 0; r < kGoalRows; ++r) e += Real(Jg[r * kDof + a]) * Jg[r * kDof + a2];
          }
        }
      }
    }
    Real *row = band + i * kBand;
    KILN_TRAJOPT_UNROLL
    for (int t = 0; t < kBand; ++t) {  // column c = i + d, d = t - a
      const int d = t - a;
      if (d < 0) continue;
      Real e = i + d < kVars ? value[t] : Real(0);
      if (d == 0) e = e * (Real(1) + lambda) + Real(1e-9);
      row[d] = e;
    }
    for (int d = kBand - a; d < kBand; ++d) row[d] = 0;  // block b + 3's columns: no knot couples them
  }
  for (int i = team.rank(); i < kVars; i += team.size()) {
    const int b = i / kDof, a = i % kDof;
    const int last = b + 2 < kN ? b + 2 : kN;
    Real g = 0;
    for (int k = b; k <= last; ++k) {
      const int slot = b - k + 2;
      const float *f = fields + k * 5 * kDof;
      const float *col = dtau_column(dtau, k, slot, a);
      for (int j = 0; j < kDof; ++j) g += Real(col[j]) * f[kDof + j];
      g += Real(slots.alpha(k, slot)) * f[4 * kDof + a] + Real(slots.beta(k, slot)) * f[3 * kDof + a];
      if (slot == 1 && v.track) {
        const float *rt = track + k * kTrackStride, *Jt = rt + kTrackRows;
        for (int r = 0; r < kTrackRows; ++r) g += Real(Jt[r * kDof + a]) * rt[r];
      } else if (k == kN && slot == 1) {
        for (int r = 0; r < kGoalRows; ++r) g += Real(Jg[r * kDof + a]) * rg[r];
      }
    }
    rhs[i] = -g;
  }
  team.sync();
}

// In place: band -> its LDL^T (row i: d_i on the diagonal, d_i * L^T(i, i + a) beyond). false when
// a pivot is not positive (the damping is raised and the step retried).
#if defined(__CUDA_ARCH__)
// 1 / x, correctly rounded, without the division routine's slow-path checks on each row's
// critical path.
__device__ __forceinline__ float reciprocal(float x) { return __frcp_rn(x); }
__device__ __forceinline__ double reciprocal(double x) { return __drcp_rn(x); }
#endif

// Pair t = b (b - 1) / 2 + a - 1 of 1 <= a <= b <= W: the upper triangle of a row's update.
KILN_TRAJOPT_HD void factor_pair(int t, int *a, int *b) {
  *b = static_cast<int>((1.0f + std::sqrt(1.0f + 8.0f * static_cast<float>(t))) * 0.5f);
  *a = t - *b * (*b - 1) / 2 + 1;
}

template <class Team>
KILN_TRAJOPT_HD bool factor(const Team &team, Real *band) {
  constexpr int W = kBand - 1, kPairs = W * (W + 1) / 2;
#if defined(__CUDA_ARCH__)
  // On a device the lead warp factors alone, each lane holding its pairs in registers: a row ends at
  // a warp barrier instead of a barrier of the whole team; the rest of the team waits at the end.
  // Every entry takes the host's updates in the host's order.
  constexpr int kHeld = (kPairs + 31) / 32;
  bool ok = true;
  const int lane = team.lane();
  if (lane >= 0) {
    int held_a[kHeld], held_b[kHeld];
#pragma unroll
    for (int h = 0; h < kHeld; ++h) {
      const int t = lane + h * 32;
      int a = 0, b = 0;  // scalars: no address of the arrays is taken, so they stay in registers
      if (t < kPairs) factor_pair(t, &a, &b);
      held_a[h] = a, held_b[h] = b;
    }
    for (int i = 0; i < kVars; ++i) {
      // Every load of the row first: the row read and the rows written do not overlap, and loads
      // issued together cost one shared-memory latency, not one per pair.
      const Real *row = band + i * kBand;
      const Real pivot = row[0];
      Real ra[kHeld], rb[kHeld], entry[kHeld];
#pragma unroll
      for (int h = 0; h < kHeld; ++h) {
        const int a = held_a[h], b = held_b[h];
        const bool live = b != 0 && i + b < kVars;
        ra[h] = live ? row[a] : Real(0), rb[h] = live ? row[b] : Real(0);
        entry[h] = live ? band[(i + a) * kBand + (b - a)] : Real(0);
      }
      if (!(pivot > Real(0))) {  // uniform: every lane read the same value
        ok = false;
        break;
      }
      const Real inv = reciprocal(pivot);  // correctly rounded, as the host's division: same factors
#pragma unroll
      for (int h = 0; h < kHeld; ++h) {
        const int a = held_a[h], b = held_b[h];
        if (b != 0 && i + b < kVars) band[(i + a) * kBand + (b - a)] = entry[h] - ra[h] * rb[h] * inv;
      }
      __syncwarp();
    }
  }
  return team.broadcast(ok ? 1.0f : 0.0f) != 0.0f;  // and the team sees the factors
#else
  for (int i = 0; i < kVars; ++i) {
    const Real pivot = band[i * kBand];
    if (!(pivot > Real(0))) return false;  // uniform: every member read the same value
    const Real inv = Real(1) / pivot;
    const Real *row = band + i * kBand;
    for (int t = team.rank(); t < kPairs; t += team.size()) {
      int a, b;
      factor_pair(t, &a, &b);
      if (i + b < kVars) band[(i + a) * kBand + (b - a)] -= row[a] * row[b] * inv;
    }
    team.sync();
  }
  return true;
#endif
}

// rhs -> the solution of (L D L^T) x = rhs, on the lead warp; the team syncs at the end.
// On a device the two substitutions keep a window of 32 consecutive entries of rhs in the warp's
// registers (lane l: the entry l rows past the current one), so a row costs a broadcast, a
// multiply-add and a shift, with no shared-memory round trip, division or barrier on its critical
// path (what made the substitutions a third of a batch-1 step); the band's off-diagonal entries
// are left divided by their row's pivot. The host path (a one-member team) runs the same updates
// in the same order, row by row.
template <class Team>
KILN_TRAJOPT_HD void solve_factored(const Team &team, Real *band, Real *rhs) {
  constexpr int W = kBand - 1;
#if defined(__CUDA_ARCH__)
  static_assert(W < 32, "the window holds the band's reach and the row being finished");
  constexpr unsigned kFull = 0xffffffffu;
  // First the whole team turns row k's d_k L^T(k, k + a) into L(k + a, k) (the diagonal stays
  // d_k): the substitutions then read their coefficients without a division, which in a warp's
  // in-order issue would sit on every row's critical path.
  for (int idx = team.rank(); idx < kVars * W; idx += team.size()) {
    const int k = idx / W, a = 1 + idx % W;
    band[k * kBand + a] /= band[k * kBand];
  }
  team.sync();
  const int lane = team.lane();
  if (lane >= 0) {
    // The band and the right-hand side do not overlap (rhs follows the band): restrict lets the
    // next row's loads, issued a row ahead, pass this row's store.
    const Real *__restrict__ B = band;
    Real *__restrict__ R = rhs;
    const auto below = [&](int k) -> Real {  // lane's L(k + lane, k), the forward pass's coefficient
      return lane >= 1 && lane <= W && k + lane < kVars ? B[k * kBand + lane] : Real(0);
    };
    Real window = lane < kVars ? R[lane] : Real(0);  // L y = rhs, forwards
    Real c = below(0), incoming = lane == 31 && 32 < kVars ? R[32] : Real(0);
    for (int k = 0; k < kVars; ++k) {
      const Real c_next = k + 1 < kVars ? below(k + 1) : Real(0);
      const Real incoming_next = lane == 31 && k + 33 < kVars ? R[k + 33] : Real(0);
      const Real y = __shfl_sync(kFull, window, 0);
      window -= c * y;
      const Real shifted = __shfl_down_sync(kFull, window, 1);
      window = lane == 31 ? incoming : shifted;
      if (lane == 0) R[k] = y;
      c = c_next, incoming = incoming_next;
    }
    __syncwarp();
    for (int i = lane; i < kVars; i += 32) R[i] /= B[i * kBand];
    __syncwarp();
    const auto above = [&](int i) -> Real {  // lane's L(i, i - lane), the backward pass's coefficient
      return lane >= 1 && lane <= W && i - lane >= 0 ? B[(i - lane) * kBand + lane] : Real(0);
    };
    window = kVars - 1 - lane >= 0 ? R[kVars - 1 - lane] : Real(0);  // L^T x = y / D, backwards
    c = above(kVars - 1), incoming = lane == 31 && kVars - 33 >= 0 ? R[kVars - 33] : Real(0);
    for (int i = kVars - 1; i >= 0; --i) {
      const Real c_next = i - 1 >= 0 ? above(i - 1) : Real(0);
      const Real incoming_next = lane == 31 && i - 33 >= 0 ? R[i - 33] : Real(0);
      const Real x = __shfl_sync(kFull, window, 0);
      window -= c * x;
      const Real shifted = __shfl_down_sync(kFull, window, 1);
      window = lane == 31 ? incoming : shifted;
      if (lane == 0) R[i] = x;
      c = c_next, incoming = incoming_next;
    }
  }
#else
  const int lane = team.lane(), lanes = team.lanes();
  if (lane >= 0) {
    for (int k = 0; k < kVars; ++k) {  // L y = rhs, column by column
      const Real y = rhs[k], inv = Real(1) / band[k * kBand];
      team.warp_sync();
      for (int a = 1 + lane; a <= W && k + a < kVars; a += lanes) rhs[k + a] -= band[k * kBand + a] * inv * y;
      team.warp_sync();
    }
    for (int i = lane; i < kVars; i += lanes) rhs[i] /= band[i * kBand];
    team.warp_sync();
    for (int i = kVars - 1; i >= 0; --i) {  // L^T x = y / D, row i final, then pushed up
      const Real xi = rhs[i];
      team.warp_sync();
      for (int a = 1 + lane; a <= W && i - a >= 0; a += lanes)
        rhs[i - a] -= band[(i - a) * kBand + a] / band[(i - a) * kBand] * xi;
      team.warp_sync();
    }
  }
#endif
  team.sync();
}

}  // namespace kiln_trajopt
