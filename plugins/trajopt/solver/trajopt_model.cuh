// kiln TrajOpt plugin: the optimisation problem of one (problem, seed), shared by the kernels and
// the host path: the knots' finite-difference states, the residuals and their cost, the goal
// error, the starting trajectories. Formulation (plugins/trajopt/README.md "Solver"): variables q_1..q_N (q_0 and the
// ghost q_{-1} = q_0 - dt qd_0 fixed), qd_k = (q_k - q_{k-1}) / dt, qdd_k = (q_{k+1} - 2 q_k +
// q_{k-1}) / dt^2 (qdd_N = 0), tau_k = RNEA(q_k, qd_k, qdd_k); every residual of knot k depends on
// q_{k-1}, q_k, q_{k+1} only ("slots" 0, 1, 2), so the Gauss-Newton matrix is block-banded.
#pragma once

#include <stdint.h>

#include <cmath>

#include "trajopt_params.hpp"

namespace kiln_trajopt {

// One problem as the solver reads it, with the goal prepared (rotation matrix of a pose goal).
struct ProblemView {
  float q0[kDof];
  float ghost[kDof];  // q_{-1}
  float qd0[kDof];
  float goal_p[3];
  float goal_R[9];
  float goal_q[kDof];
  float dt;
  uint32_t index;       // the problem's index in its batch
  uint32_t joint_goal;
  uint32_t track;       // a tracking problem (goal_p, goal_R: its last reference pose, for the starting trajectories)
  uint32_t track_oriented;  // a tracking problem whose last knot's orientation weight is not 0
  bool finite;
};

KILN_TRAJOPT_HD bool finite(float v) { return v - v == 0.0f; }  // false for NaN and +-inf
KILN_TRAJOPT_HD float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Quaternion (w x y z) to a row-major rotation matrix; normalises; false when zero or not finite.
KILN_TRAJOPT_HD bool quaternion_to_matrix(const float *quat, float *R) {
  const float n2 = quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3];
  if (!finite(n2) || n2 < 1e-12f) return false;
  const float s = 2.0f / n2, w = quat[0], x = quat[1], y = quat[2], z = quat[3];
  R[0] = 1 - s * (y * y + z * z), R[1] = s * (x * y - w * z), R[2] = s * (x * z + w * y);
  R[3] = s * (x * y + w * z), R[4] = 1 - s * (x * x + z * z), R[5] = s * (y * z - w * x);
  R[6] = s * (x * z - w * y), R[7] = s * (y * z + w * x), R[8] = 1 - s * (x * x + y * y);
  return true;
}

// The rotation vector (axis * angle, angle in [0, pi]) of a rotation matrix, via its quaternion.
template <class T>
KILN_TRAJOPT_HD void rotation_vector(const T *E, T *e) {
  T w, x, y, z;
  const T trace = E[0] + E[4] + E[8];
  if (trace > 0) {
    const T s = std::sqrt(trace + T(1)) * T(2);
    w = T(0.25) * s, x = (E[7] - E[5]) / s, y = (E[2] - E[6]) / s, z = (E[3] - E[1]) / s;
  } else if (E[0] > E[4] && E[0] > E[8]) {
    const T s = std::sqrt(T(1) + E[0] - E[4] - E[8]) * T(2);
    w = (E[7] - E[5]) / s, x = T(0.25) * s, y = (E[1] + E[3]) / s, z = (E[2] + E[6]) / s;
  } else if (E[4] > E[8]) {
    const T s = std::sqrt(T(1) + E[4] - E[0] - E[8]) * T(2);
    w = (E[2] - E[6]) / s, x = (E[1] + E[3]) / s, y = T(0.25) * s, z = (E[5] + E[7]) / s;
  } else {
    const T s = std::sqrt(T(1) + E[8] - E[0] - E[4]) * T(2);
    w = (E[3] - E[1]) / s, x = (E[2] + E[6]) / s, y = (E[5] + E[7]) / s, z = T(0.25) * s;
  }
  if (w < 0) w = -w, x = -x, y = -y, z = -z;
  const T v = std::sqrt(x * x + y * y + z * z);
  const T scale = v > T(1e-12) ? T(2) * std::atan2(v, w) / v : T(2);
  e[0] = scale * x, e[1] = scale * y, e[2] = scale * z;
}

// Reads problem i of a batch (host or device memory, as the kernel sees it).
KILN_TRAJOPT_HD ProblemView load_problem(const KernelParams &p, uint32_t i) {
  ProblemView v{};
  v.index = i;
  v.dt = p.dt != nullptr ? p.dt[i] : p.settings.dt;
  v.joint_goal = p.goal_kinds != nullptr && p.goal_kinds[i] == KILN_TRAJOPT_GOAL_JOINT ? 1u : 0u;
  v.track = p.goal_kinds != nullptr && p.goal_kinds[i] == KILN_TRAJOPT_GOAL_TRACK ? 1u : 0u;
  v.track_oriented = v.track && p.track_weights != nullptr && p.track_weights[(size_t{i} * kN + kN - 1) * 2 + 1] != 0.0f;
  bool ok = finite(v.dt) && v.dt > 0.0f;
  for (int j = 0; j < kDof; ++j) {
    const float q = p.q0[size_t{i} * kDof + j];
    v.qd0[j] = p.qd0 != nullptr ? p.qd0[size_t{i} * kDof + j] : 0.0f;
    ok = ok && finite(q) && finite(v.qd0[j]);
    v.q0[j] = p.limits.position_limited[j] ? clampf(q, p.limits.true_lower[j], p.limits.true_upper[j]) : q;
    v.ghost[j] = v.q0[j] - v.dt * v.qd0[j];
  }
  if (v.joint_goal) {
    for (int j = 0; j < kDof; ++j) {
      v.goal_q[j] = p.joint_goals[size_t{i} * kDof + j];
      ok = ok && finite(v.goal_q[j]);
    }
  } else if (v.track && p.track_poses == nullptr) {  // device memory without the references: never read
    ok = false;
  } else {
    const float *g = v.track ? p.track_poses + (size_t{i} * kN + kN - 1) * KILN_TRAJOPT_POSE_SIZE
                             : p.pose_goals + size_t{i} * KILN_TRAJOPT_POSE_SIZE;
    for (int k = 0; k < 3; ++k) v.goal_p[k] = g[k], ok = ok && finite(g[k]);
    ok = quaternion_to_matrix(g + 3, v.goal_R) && ok;
  }
  v.finite = ok;
  return v;
}

// q_k of trajectory x (k = -1: the ghost, 0: q_0).
KILN_TRAJOPT_HD const float *knot_q(const float *x, const ProblemView &v, int k) {
  return k < 0 ? v.ghost : (k == 0 ? v.q0 : x + (k - 1) * kDof);
}

// q_k, qd_k, qdd_k of knot k.
KILN_TRAJOPT_HD void knot_state(const float *x, const ProblemView &v, int k, float *q, float *qd, float *qdd) {
  const float *prev = knot_q(x, v, k - 1), *here = knot_q(x, v, k);
  const float *next = k < kN ? knot_q(x, v, k + 1) : here;
  const float inv = 1.0f / v.dt;
  for (int j = 0; j < kDof; ++j) {
    q[j] = here[j];
    qd[j] = k == 0 ? v.qd0[j] : (here[j] - prev[j]) * inv;
    qdd[j] = k < kN ? (next[j] - 2.0f * here[j] + prev[j]) * inv * inv : 0.0f;
  }
}

// The constant coefficients of a knot's slots: alpha (acceleration residual per unit q of the
// slot, times its weight) and beta (velocity per unit q). Worked out once per assembly: a square
// root and divisions per band entry would sit in every thread's in-order issue.
struct SlotCoefficients {
  float c, inv_dt;
  KILN_TRAJOPT_HD SlotCoefficients(const ProblemView &v, float smoothness)
      : c(smoothness * std::sqrt(v.dt) / (v.dt * v.dt)), inv_dt(1.0f / v.dt) {}
  KILN_TRAJOPT_HD float alpha(int k, int slot) const { return k >= kN ? 0.0f : (slot == 1 ? -2.0f * c : c); }
  KILN_TRAJOPT_HD float beta(int k, int slot) const { return k == 0 || slot == 2 ? 0.0f : (slot == 1 ? inv_dt : -inv_dt); }
};

// A hinge residual beyond margin * limit: r = w (|u| - 1) sign(u), u = value / (margin * limit).
// Adds its weight^2 (d r / d value)^2 to *weight, its gradient weight (d r / d value) r to *grad,
// returns r^2 / 2.
KILN_TRAJOPT_HD float hinge(float value, float limit, float *weight, float *grad) {
  if (limit <= 0.0f) return 0.0f;
  const float scale = 1.0f / (kLimitMargin * limit), u = value * scale;
  if (u <= 1.0f && u >= -1.0f) return 0.0f;
  const float r = kLimitWeight * (u > 0.0f ? u - 1.0f : u + 1.0f), d = kLimitWeight * scale;
  *weight += d * d;
  *grad += d * r;
  return 0.5f * r * r;
}

// What one evaluation of a trajectory found (identical on every team member).
struct Eval {
  float cost;
  float position_error;     // goal problems: at knot N; tracking problems: the largest over the knots
  float orientation_error;
  float velocity_violation;
  float torque_violation;
  float limit_use;          // the largest |qd| / velocity limit and |tau| / effort limit over the knots
  bool finite;
};

// Within every limit; a goal problem also within its tolerances (a tracking problem has none).
KILN_TRAJOPT_HD bool meets(const Eval &e, const Settings &s, const ProblemView &v) {
  const bool limits = e.finite && e.velocity_violation <= 0.0f && e.torque_violation <= 0.0f;
  return limits && (v.track || (e.position_error <= s.position_tolerance && e.orientation_error <= s.orientation_tolerance));
}

// Knot k's tracking terms (k >= 1) at the tip pose P, R with the FK Jacobian J (6 x dof, column j at
// 6 j): residual and Jacobian rows into `out` (kTrackStride floats), the errors into *pe, *oe
// (orientation only where its weight is not 0); returns the cost.
KILN_TRAJOPT_HD float track_terms(const KernelParams &p, const ProblemView &v, int k, float scale, const float *P,
                                  const float *R, const float *J, float *out, float *pe, float *oe) {
  const size_t at = size_t{v.index} * kN + (k - 1);
  const float *ref = p.track_poses + at * KILN_TRAJOPT_POSE_SIZE;
  const float default_weight = kDefaultTrackShare * p.settings.goal_weight;
  const float wp = scale * (p.track_weights != nullptr ? p.track_weights[2 * at] : default_weight);
  const float wo = scale * (p.track_weights != nullptr ? p.track_weights[2 * at + 1] : 0.0f);
  float *r = out, *Jt = out + kTrackRows;
  float d2 = 0.0f, e[3] = {0.0f, 0.0f, 0.0f};
  for (int a = 0; a < 3; ++a) {
    const float d = P[a] - ref[a];
    d2 += d * d;
    r[a] = wp * d;
  }
  float Rref[9];
  const bool oriented = (p.track_weights != nullptr && p.track_weights[2 * at + 1] != 0.0f);
  if (oriented && quaternion_to_matrix(ref + 3, Rref)) {
    float E[9];
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        E[3 * a + b] = R[3 * a] * Rref[3 * b] + R[3 * a + 1] * Rref[3 * b + 1] + R[3 * a + 2] * Rref[3 * b + 2];
    rotation_vector(E, e);
    *oe = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
  } else {
    *oe = oriented ? NAN : 0.0f;  // a zero quaternion from device memory: not finite
  }
  for (int a = 0; a < 3; ++a) r[3 + a] = wo * e[a];
  for (int a = 0; a < kTrackRows; ++a)
    for (int j = 0; j < kDof; ++j) Jt[a * kDof + j] = (a < 3 ? wp : wo) * J[6 * j + a];
  *pe = std::sqrt(d2);
  float cost = 0.0f;
  for (int a = 0; a < kTrackRows; ++a) cost += 0.5f * r[a] * r[a];
  return cost;
}

// Knot N's goal: residual r (kGoalRows), Jacobian Jg (kGoalRows x dof, row-major) and errors.
KILN_TRAJOPT_HD float goal_terms(const float *qN, const ProblemView &v, float w, float *r, float *Jg,
                                 float *position_error, float *orientation_error) {
  for (int i = 0; i < kGoalRows * kDof; ++i) Jg[i] = 0.0f;
  for (int i = 0; i < kGoalRows; ++i) r[i] = 0.0f;
  if (v.joint_goal) {
    float worst = 0.0f;
    for (int j = 0; j < kDof; ++j) {
      const float d = qN[j] - v.goal_q[j];
      r[j] = w * d;
      Jg[j * kDof + j] = w;
      worst = fmaxf(worst, fabsf(d));
    }
    *position_error = worst;
    *orientation_error = 0.0f;
  } else {
    float p[3], R[9], J[6 * kDof];
    Fk::fk_jacobian(qN, p, R, J);
    float E[9], e[3];  // E = R R_goal^T: the rotation from the goal's orientation to the tip's, base frame
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        E[3 * a + b] = R[3 * a] * v.goal_R[3 * b] + R[3 * a + 1] * v.goal_R[3 * b + 1] + R[3 * a + 2] * v.goal_R[3 * b + 2];
    rotation_vector(E, e);
    float d2 = 0.0f;
    for (int a = 0; a < 3; ++a) {
      const float d = p[a] - v.goal_p[a];
      d2 += d * d;
      r[a] = w * d;
      r[3 + a] = w * e[a];
    }
    // d e / d q ~ the angular Jacobian (exact at e = 0): Gauss-Newton's model of the error.
    for (int a = 0; a < 6; ++a)
      for (int j = 0; j < kDof; ++j) Jg[a * kDof + j] = w * J[6 * j + a];
    *position_error = std::sqrt(d2);
    *orientation_error = std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    if (v.track && !v.track_oriented) {  // a position-only reference's end (starting trajectories only)
      for (int a = 3; a < 6; ++a) {
        r[a] = 0.0f;
        for (int j = 0; j < kDof; ++j) Jg[a * kDof + j] = 0.0f;
      }
      *orientation_error = 0.0f;
    }
  }
  float cost = 0.0f;
  for (int i = 0; i < kGoalRows; ++i) cost += 0.5f * r[i] * r[i];
  return cost;
}

// Evaluates trajectory x under settings s into eval buffer `buf` (EvalLayout): every knot's
// torques, residual weights (wt, ut: torque space; wv, uv: velocity space; ra: weighted
// acceleration), the goal or the tracking terms.
template <class Team>
KILN_TRAJOPT_HD Eval evaluate(const Team &team, const float *x, const ProblemView &v, const KernelParams &p,
                              const Settings &s, float *buf) {
  const Limits &lim = p.limits;
  float cost = 0.0f, vel = 0.0f, tau_violation = 0.0f, bad = 0.0f, position_error = 0.0f, orientation_error = 0.0f;
  float use = 0.0f;
  const float root_dt = std::sqrt(v.dt);
  const float goal_weight = s.goal_weight * s.goal_scale;
  for (int k = team.rank(); k <= kN; k += team.size()) {
    float q[kDof], qd[kDof], qdd[kDof], tau[kDof];
    knot_state(x, v, k, q, qd, qdd);
    Dyn::rnea(q, qd, qdd, tau);
    float *f = buf + EvalLayout::kKnotFields + k * 5 * kDof;
    float *wt = f, *ut = f + kDof, *wv = f + 2 * kDof, *uv = f + 3 * kDof, *ra = f + 4 * kDof;
    float c = 0.0f;
    const float ca = k < kN ? s.smoothness_weight * root_dt : 0.0f;
    const float terminal = k == kN && !v.track ? goal_weight * kTerminalVelocityShare : 0.0f;
    for (int j = 0; j < kDof; ++j) {
      buf[EvalLayout::kTau + k * kDof + j] = tau[j];
      const float ce = lim.effort[j] > 0.0f ? s.effort_weight * root_dt / lim.effort[j] : 0.0f;
      const float re = ce * tau[j];
      wt[j] = ce * ce, ut[j] = ce * re;
      c += 0.5f * re * re + hinge(tau[j], lim.effort[j], &wt[j], &ut[j]);
      wv[j] = 0.0f, uv[j] = 0.0f;
      if (k > 0) {
        c += hinge(qd[j], lim.velocity[j], &wv[j], &uv[j]);
        const float rt = terminal * qd[j];
        wv[j] += terminal * terminal, uv[j] += terminal * rt;
        c += 0.5f * rt * rt;
        if (lim.velocity[j] > 0.0f) {
          vel = fmaxf(vel, fabsf(qd[j]) - lim.velocity[j]);
          use = fmaxf(use, fabsf(qd[j]) / lim.velocity[j]);
        }
      }
      ra[j] = ca * qdd[j];
      c += 0.5f * ra[j] * ra[j];
      if (lim.effort[j] > 0.0f) {
        tau_violation = fmaxf(tau_violation, fabsf(tau[j]) - lim.effort[j]);
        use = fmaxf(use, fabsf(tau[j]) / lim.effort[j]);
      }
    }
    if (v.track && k > 0 && v.finite) {
      float P[3], R[9], J[6 * kDof], pe, oe;
      Fk::fk_jacobian(q, P, R, J);
      c += track_terms(p, v, k, s.goal_scale, P, R, J, buf + EvalLayout::kTrack + k * kTrackStride, &pe, &oe);
      position_error = fmaxf(position_error, pe);
      orientation_error = fmaxf(orientation_error, oe);
      if (!finite(oe)) bad += 1.0f;
    } else if (k == kN && !v.track) {
      float *g = buf + EvalLayout::kGoal;
      c += goal_terms(q, v, goal_weight, g, g + kGoalRows, &position_error, &orientation_error);
    }
    if (!finite(c)) bad += 1.0f;
    cost += c;
  }
  Eval e;
  e.cost = team.sum(cost);
  e.finite = team.sum(bad) == 0.0f && v.finite;
  e.position_error = team.max(position_error);
  e.orientation_error = team.max(orientation_error);
  e.velocity_violation = team.max(vel);
  e.torque_violation = team.max(tau_violation);
  e.limit_use = team.max(use);
  if (!e.finite) e.cost = INFINITY;
  return e;
}

template <class Team>
KILN_TRAJOPT_HD Eval evaluate(const Team &team, const float *x, const ProblemView &v, const KernelParams &p, float *buf) {
  return evaluate(team, x, v, p, p.settings, buf);
}

// splitmix64 of (key, problem, seed, joint): a reproducible uniform float in [0, 1).
KILN_TRAJOPT_HD float uniform(uint64_t key, uint32_t problem, uint32_t seed, uint32_t joint) {
  uint64_t z = key ^ (uint64_t{problem} * 0x9e3779b97f4a7c15ull) ^ (uint64_t{seed} << 40) ^ (uint64_t{joint} << 20);
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// The chain's limits (the generated header's, in double) as the solver uses them.
inline Limits chain_limits() {
  Limits l{};
  for (int j = 0; j < kDof; ++j) {
    l.position_limited[j] = Dyn::kPositionLimited[j] ? 1u : 0u;
    l.true_lower[j] = static_cast<float>(Dyn::kLower[j]);
    l.true_upper[j] = static_cast<float>(Dyn::kUpper[j]);
    l.lower[j] = static_cast<float>(Dyn::kLower[j] + kPositionInset);
    l.upper[j] = static_cast<float>(Dyn::kUpper[j] - kPositionInset);
    l.velocity[j] = static_cast<float>(Dyn::kVelocityLimit[j]);
    l.effort[j] = static_cast<float>(Dyn::kEffortLimit[j]);
  }
  return l;
}

KILN_TRAJOPT_HD float project(const Limits &lim, int j, float q) {
  return lim.position_limited[j] ? clampf(q, lim.lower[j], lim.upper[j]) : q;
}

// Solves A x = b in place (A: n x n symmetric positive definite, row-major; b -> x). false when not
// positive definite.
template <int n>
KILN_TRAJOPT_HD bool cholesky_solve(float *A, float *b) {
  for (int c = 0; c < n; ++c) {
    float d = A[c * n + c];
    for (int k = 0; k < c; ++k) d -= A[c * n + k] * A[c * n + k];
    if (!(d > 0.0f)) return false;
    d = std::sqrt(d);
    A[c * n + c] = d;
    for (int r = c + 1; r < n; ++r) {
      float v = A[r * n + c];
      for (int k = 0; k < c; ++k) v -= A[r * n + k] * A[c * n + k];
      A[r * n + c] = v / d;
    }
  }
  for (int r = 0; r < n; ++r) {
    for (int k = 0; k < r; ++k) b[r] -= A[r * n + k] * b[k];
    b[r] /= A[r * n + r];
  }
  for (int r = n - 1; r >= 0; --r) {
    for (int k = r + 1; k < n; ++k) b[r] -= A[k * n + r] * b[k];
    b[r] /= A[r * n + r];
  }
  return true;
}

// An end configuration for a pose goal: damped least squares on the goal error from `start`, with a
// weak pull towards `start` (the least motion among the redundant solutions), projected into the
// limits. A starting trajectory only: the trajectory optimisation makes it exact.
KILN_TRAJOPT_HD void pose_goal_end(const ProblemView &v, const Limits &lim, const float *start, float *q) {
  constexpr float kPull = 1e-3f;
  float r[kGoalRows], J[kGoalRows * kDof], pe, oe;
  for (int j = 0; j < kDof; ++j) q[j] = project(lim, j, start[j]);
  const auto cost_at = [&](const float *at) {
    float c = goal_terms(at, v, 1.0f, r, J, &pe, &oe);
    for (int j = 0; j < kDof; ++j) c += 0.5f * kPull * (at[j] - start[j]) * (at[j] - start[j]);
    return c;
  };
  float cost = cost_at(q), lambda = 1e-2f;
  for (int it = 0; it < 40 && (pe > 1e-4f || oe > 1e-3f); ++it) {
    float A[kDof * kDof], g[kDof], trial[kDof];
    for (int a = 0; a < kDof; ++a) {
      g[a] = -kPull * (q[a] - start[a]);
      for (int i = 0; i < kGoalRows; ++i) g[a] -= J[i * kDof + a] * r[i];
      for (int b = 0; b < kDof; ++b) {
        float h = a == b ? kPull + lambda : 0.0f;
        for (int i = 0; i < kGoalRows; ++i) h += J[i * kDof + a] * J[i * kDof + b];
        A[a * kDof + b] = h;
      }
    }
    if (!cholesky_solve<kDof>(A, g)) break;
    for (int j = 0; j < kDof; ++j) trial[j] = project(lim, j, q[j] + g[j]);
    const float t = cost_at(trial);
    if (finite(t) && t < cost) {
      for (int j = 0; j < kDof; ++j) q[j] = trial[j];
      cost = t;
      lambda = fmaxf(lambda * 0.3f, 1e-6f);
    } else {
      lambda *= 4.0f;
    }
    cost = cost_at(q);  // r, J, pe, oe at q again
  }
}

// Seed 0's given trajectory: q_1..q_N (kN * dof), read advanced by one knot when shift is set.
struct Given {
  const float *q;
  bool shift;
  KILN_TRAJOPT_HD float at(int i) const {  // variable i = (k - 1) * dof + j
    if (!shift) return q[i];
    const int next = i + kDof;
    return q[next < kVars ? next : i];
  }
};

// Seed `seed`'s starting trajectory into x: seed 0 from `given` (kN * dof) when not NULL; else a
// minimum-jerk interpolation from q_0 (leaving with qd_0) to an end: for seed 0 the joint goal, or a
// pose goal's least-motion IK answer from q_0; for the others the same from a random joint vector
// within +-0.4 rad (joint goals) or +-1 rad (pose goals, the IK's start) of seed 0's; projected.
template <class Team>
KILN_TRAJOPT_HD void start_trajectory(const Team &team, const ProblemView &v, const KernelParams &p, uint32_t problem,
                                      uint32_t seed, const Given &given, float *x) {
  float end[kDof];
  if (!(given.q != nullptr && seed == 0)) {  // every member computes the same end
    float from[kDof];
    for (int j = 0; j < kDof; ++j) {
      from[j] = given.q != nullptr ? given.at((kN - 1) * kDof + j) : (v.joint_goal ? v.goal_q[j] : v.q0[j]);
      const float spread = v.joint_goal ? 0.8f : 2.0f;
      if (seed > 0) from[j] += spread * (uniform(p.settings.random_seed, problem, seed, static_cast<uint32_t>(j)) - 0.5f);
      if (!finite(from[j])) from[j] = 0.0f;
    }
    if (v.joint_goal || !v.finite) {
      for (int j = 0; j < kDof; ++j) end[j] = project(p.limits, j, from[j]);
    } else {
      pose_goal_end(v, p.limits, from, end);
    }
  }
  for (int i = team.rank(); i < kVars; i += team.size()) {
    const int k = i / kDof + 1, j = i % kDof;
    float value;
    if (given.q != nullptr && seed == 0) {
      value = given.at(i);
    } else {
      const float t = static_cast<float>(k) / kN, blend = t * t * t * (10.0f + t * (-15.0f + 6.0f * t));
      value = v.q0[j] + (end[j] - v.q0[j]) * blend + v.qd0[j] * v.dt * k * (1.0f - t) * (1.0f - t);
    }
    x[i] = project(p.limits, j, finite(value) ? value : v.q0[j]);
  }
  team.sync();
}

}  // namespace kiln_trajopt
