// kiln IK solver core: one seed's Levenberg-Marquardt iterations, for one thread on the device
// or for the plugin's host fallback. Templated on the generated chain (kiln_fk_chain.cuh's
// Chain) and the scalar type. The algorithm is described in ../common/kiln_ik_common.hpp.
// No allocation, no library calls beyond <cmath>: everything lives in the caller's registers.
#pragma once

#include <stdint.h>

#include <cmath>

#include "kiln_hd_math.hpp"
#include "kiln_ik_common.hpp"
#include "kiln_rotation.hpp"

namespace kiln_ik {

// The host and device math: plugins/common/kiln_hd_math.hpp.
using kiln_plugin_common::hd::atan2_;
using kiln_plugin_common::hd::finite_;
using kiln_plugin_common::hd::floor_;
using kiln_plugin_common::hd::sqrt_;

// Joint limits as the solver uses them (rounded inwards to T by the host, so a clamped value
// is inside the model's limits); bit j of wrap: joint j is continuous (wrapped into [-pi, pi]).
template <class T, int N>
struct Limits {
  T lower[N];
  T upper[N];
  uint32_t wrap;
};

// A target: position and rotation matrix (row-major) from the caller's x y z qw qx qy qz.
template <class T>
struct Target {
  T p[3];
  T R[9];
};

// false when the quaternion is zero or anything is not finite.
template <class T>
KILN_IK_HD bool make_target(const float *pose, Target<T> &out) {
  for (int i = 0; i < KILN_IK_POSE_SIZE; ++i) {
    if (!finite_(pose[i])) return false;
  }
  T w = static_cast<T>(pose[3]), x = static_cast<T>(pose[4]), y = static_cast<T>(pose[5]), z = static_cast<T>(pose[6]);
  const T norm2 = w * w + x * x + y * y + z * z;
  if (!(norm2 > static_cast<T>(1e-12))) return false;
  const T inv = static_cast<T>(1) / sqrt_(norm2);
  w *= inv, x *= inv, y *= inv, z *= inv;
  out.p[0] = static_cast<T>(pose[0]);
  out.p[1] = static_cast<T>(pose[1]);
  out.p[2] = static_cast<T>(pose[2]);
  const T one = static_cast<T>(1), two = static_cast<T>(2);
  out.R[0] = one - two * (y * y + z * z);
  out.R[1] = two * (x * y - z * w);
  out.R[2] = two * (x * z + y * w);
  out.R[3] = two * (x * y + z * w);
  out.R[4] = one - two * (x * x + z * z);
  out.R[5] = two * (y * z - x * w);
  out.R[6] = two * (x * z - y * w);
  out.R[7] = two * (y * z + x * w);
  out.R[8] = one - two * (x * x + y * y);
  return true;
}

// Unit quaternion (w >= 0) of a rotation matrix: the plugin kit's (plugins/common/kiln_rotation.hpp).
using kiln_plugin_common::matrix_to_quaternion;

// e = [p_target - p; rotation vector of R_target R^T]; position and orientation error; cost = |e|^2.
template <class T>
KILN_IK_HD void pose_error(const Target<T> &target, const T *p, const T *R, T *e, T &position_error,
                           T &orientation_error, T &cost) {
  e[0] = target.p[0] - p[0];
  e[1] = target.p[1] - p[1];
  e[2] = target.p[2] - p[2];
  T M[9];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      M[3 * i + j] = target.R[3 * i] * R[3 * j] + target.R[3 * i + 1] * R[3 * j + 1] + target.R[3 * i + 2] * R[3 * j + 2];
    }
  }
  T w, x, y, z;
  matrix_to_quaternion(M, w, x, y, z);
  const T s = sqrt_(x * x + y * y + z * z);
  const T angle = 2 * atan2_(s, w);
  const T scale = s > static_cast<T>(1e-20) ? angle / s : static_cast<T>(2);
  e[3] = x * scale;
  e[4] = y * scale;
  e[5] = z * scale;
  const T p2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
  position_error = sqrt_(p2);
  orientation_error = angle;
  cost = p2 + angle * angle;
}

// x = A^-1 b for a symmetric positive-definite 6x6 A (row-major, only the lower triangle is
// read), by Cholesky. false when A is not positive definite (numerically).
template <class T>
KILN_IK_HD bool cholesky_solve6(T *A, T *b) {
  for (int j = 0; j < 6; ++j) {
    T d = A[6 * j + j];
    for (int k = 0; k < j; ++k) d -= A[6 * j + k] * A[6 * j + k];
    if (!(d > 0)) return false;
    const T l = sqrt_(d);
    A[6 * j + j] = l;
    const T inv = static_cast<T>(1) / l;
    for (int i = j + 1; i < 6; ++i) {
      T v = A[6 * i + j];
      for (int k = 0; k < j; ++k) v -= A[6 * i + k] * A[6 * j + k];
      A[6 * i + j] = v * inv;
    }
  }
  for (int i = 0; i < 6; ++i) {  // L y = b
    T v = b[i];
    for (int k = 0; k < i; ++k) v -= A[6 * i + k] * b[k];
    b[i] = v / A[6 * i + i];
  }
  for (int i = 5; i >= 0; --i) {  // L^T x = y
    T v = b[i];
    for (int k = i + 1; k < 6; ++k) v -= A[6 * k + i] * b[k];
    b[i] = v / A[6 * i + i];
  }
  return true;
}

template <class T, int N>
KILN_IK_HD void project(const Limits<T, N> &limits, T *q) {
  for (int j = 0; j < N; ++j) {
    if (limits.wrap & (1u << j)) {
      const T two_pi = static_cast<T>(2 * kPi);
      q[j] -= two_pi * floor_((q[j] + static_cast<T>(kPi)) / two_pi);
      if (q[j] < limits.lower[j]) q[j] = limits.lower[j];
      if (q[j] > limits.upper[j]) q[j] = limits.upper[j];
    } else {
      q[j] = q[j] < limits.lower[j] ? limits.lower[j] : (q[j] > limits.upper[j] ? limits.upper[j] : q[j]);
    }
  }
}

// The starting point of (target, seed, restart); initial: that target's initial q or nullptr.
template <class T, int N>
KILN_IK_HD void starting_point(const Limits<T, N> &limits, const float *initial, uint64_t key, uint32_t target,
                               uint32_t seed, uint32_t restart, T *q) {
  if (seed == 0 && restart == 0) {
    for (int j = 0; j < N; ++j) {
      q[j] = initial != nullptr ? static_cast<T>(initial[j])
                                : ((limits.wrap & (1u << j)) ? static_cast<T>(0)
                                                             : limits.lower[j] + (limits.upper[j] - limits.lower[j]) / 2);
    }
    project(limits, q);
    return;
  }
  for (int j = 0; j < N; ++j) {
    const T u = static_cast<T>(uniform01(key, target, seed, restart, static_cast<uint32_t>(j)));
    q[j] = limits.lower[j] + u * (limits.upper[j] - limits.lower[j]);
  }
  project(limits, q);
}

// One seed's state.
template <class Chain, class T>
struct Seed {
  static constexpr int N = Chain::kDof;
  T q[N];
  T e[6];
  T cost, position_error, orientation_error, lambda, window_cost;
  uint32_t window, restart;
  bool converged;
};

template <class Chain, class T>
KILN_IK_HD void evaluate(const Target<T> &target, const T *q, T *e, T &position_error, T &orientation_error, T &cost) {
  T p[3], R[9];
  Chain::template fk<T>(q, p, R);
  pose_error(target, p, R, e, position_error, orientation_error, cost);
}

template <class Chain, class T>
KILN_IK_HD void restart_seed(Seed<Chain, T> &s, const Target<T> &target, const Limits<T, Chain::kDof> &limits,
                             const float *initial, const Settings &settings, uint32_t target_index,
                             uint32_t seed_index, uint32_t restart) {
  s.restart = restart;
  starting_point(limits, initial, settings.random_seed, target_index, seed_index, restart, s.q);
  evaluate<Chain>(target, s.q, s.e, s.position_error, s.orientation_error, s.cost);
  s.lambda = static_cast<T>(settings.damping);
  s.window = 0;
  s.window_cost = s.cost;
  s.converged = s.position_error < static_cast<T>(settings.position_tolerance) &&
                s.orientation_error < static_cast<T>(settings.orientation_tolerance);
}

// One Levenberg-Marquardt iteration of a seed that has not converged.
template <class Chain, class T>
KILN_IK_HD void iterate(Seed<Chain, T> &s, const Target<T> &target, const Limits<T, Chain::kDof> &limits,
                        const Settings &settings, uint32_t target_index, uint32_t seed_index) {
  constexpr int N = Chain::kDof;
  T p[3], R[9], J[6 * N];
  Chain::template fk_jacobian<T>(s.q, p, R, J);
  // Two passes: the damped least-squares step; then, when joints sitting at a limit would be
  // pushed further out (so the projection would cancel their share of the step), the step
  // again without them, so that the free joints make up for them.
  bool accepted = false;
  bool solved = false;
  T trial[N];
  for (int pass = 0; pass < 2; ++pass) {
    T A[36];
    for (int i = 0; i < 6; ++i) {
      for (int k = 0; k <= i; ++k) {
        T v = 0;
        for (int j = 0; j < N; ++j) v += J[6 * j + i] * J[6 * j + k];
        A[6 * i + k] = v;
      }
      A[6 * i + i] += s.lambda;
    }
    T y[6] = {s.e[0], s.e[1], s.e[2], s.e[3], s.e[4], s.e[5]};
    solved = cholesky_solve6(A, y);
    if (!solved) break;
    bool locked = false;
    for (int j = 0; j < N; ++j) {
      T d = 0;
      for (int i = 0; i < 6; ++i) d += J[6 * j + i] * y[i];
      trial[j] = s.q[j] + d;
      if (!(limits.wrap & (1u << j)) && ((s.q[j] <= limits.lower[j] && d < 0) || (s.q[j] >= limits.upper[j] && d > 0))) {
        locked = true;
        for (int i = 0; i < 6; ++i) J[6 * j + i] = 0;  // joint j sits out the second pass
      }
    }
    if (!locked) break;
  }
  if (solved) {
    project(limits, trial);
    T e[6], position_error, orientation_error, cost;
    evaluate<Chain>(target, trial, e, position_error, orientation_error, cost);
    if (cost < s.cost) {
      accepted = true;
      for (int j = 0; j < N; ++j) s.q[j] = trial[j];
      for (int i = 0; i < 6; ++i) s.e[i] = e[i];
      s.cost = cost;
      s.position_error = position_error;
      s.orientation_error = orientation_error;
      const T lambda = s.lambda * static_cast<T>(kLambdaDown);
      s.lambda = lambda > static_cast<T>(kLambdaMin) ? lambda : static_cast<T>(kLambdaMin);
    }
  }
  if (!accepted) s.lambda *= static_cast<T>(kLambdaUp);
  s.converged = s.position_error < static_cast<T>(settings.position_tolerance) &&
                s.orientation_error < static_cast<T>(settings.orientation_tolerance);
  if (s.converged) return;
  bool stalled = s.lambda > static_cast<T>(kLambdaMax);
  if (++s.window == kStallWindow) {
    stalled = stalled || s.cost > s.window_cost * (static_cast<T>(1) - static_cast<T>(kStallRatio));
    s.window = 0;
    s.window_cost = s.cost;
  }
  if (stalled) restart_seed(s, target, limits, nullptr, settings, target_index, seed_index, s.restart + 1);
}

}  // namespace kiln_ik
