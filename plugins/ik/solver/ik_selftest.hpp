// kiln IK plugin: the self-test of "kiln.selftest/1" (abi/kiln/ext/selftest.h), host code.
//
// A version of the solver is served only when it solves known problems right. What it checks,
// with no randomness at run time:
//   1. fk at q = 0 (double) against the tip pose the generator composed from the joint origins
//      (Chain::kTipAtZero*, not fk's code), and the float fk the kernel uses against the double;
//   2. kTargets targets, the fk of fixed joint vectors well inside the limits, solved through the
//      caller's solve path (the same one the control thread uses: solve_async + wait, on the
//      device when activated on one), once cold (no initial q) and once from a nearby initial q.
//      Every target must converge, stay inside the limits, and its answer, judged by the double
//      fk, must be within the tolerances (plus kSlack for float rounding) and match the errors the
//      solver reported.
#pragma once

#include <stdint.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "ik_core.cuh"
#include "kiln/ext/ik.h"
#include "kiln/plugin.hpp"
#include "../common/kiln_ik_batch.hpp"

namespace kiln_ik {
namespace selftest {

constexpr uint32_t kTargets = 8;
constexpr uint64_t kRandomKey = 0x6b696c6e73656c66ull;  // the solver's random starting points, fixed
constexpr double kZeroTolerance = 1e-9;                 // fk at q = 0 vs the generator's pose (m, and R entries)
constexpr double kFloatTolerance = 1e-5;                // float fk vs double fk at q = 0
constexpr double kPositionSlack = 1e-5;                 // m: the answer judged in double vs the float solver
constexpr double kOrientationSlack = 1e-4;              // rad

// Fixed joint vector k: each joint within the middle 70 % of its range.
template <class Chain>
void configuration(uint32_t k, double *q) {
  for (int j = 0; j < Chain::kDof; ++j) {
    const double u = 0.5 + 0.35 * std::sin(1.7 * (k + 1) + 2.3 * (j + 1));
    q[j] = Chain::kLower[j] + u * (Chain::kUpper[j] - Chain::kLower[j]);
  }
}

// A pose (x y z qw qx qy qz, w >= 0) from a rotation matrix and a position.
template <class T>
void to_pose(const T *p, const T *R, double *pose) {
  double w, x, y, z;
  double Rd[9];
  for (int i = 0; i < 9; ++i) Rd[i] = static_cast<double>(R[i]);
  matrix_to_quaternion(Rd, w, x, y, z);
  const double values[KILN_IK_POSE_SIZE] = {static_cast<double>(p[0]), static_cast<double>(p[1]),
                                            static_cast<double>(p[2]), w, x, y, z};
  for (int k = 0; k < KILN_IK_POSE_SIZE; ++k) pose[k] = values[k];
}

// Distance (m) and angle (rad) between two poses.
inline void pose_distance(const double *a, const double *b, double &position, double &orientation) {
  const double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  position = std::sqrt(dx * dx + dy * dy + dz * dz);
  const double na = std::sqrt(a[3] * a[3] + a[4] * a[4] + a[5] * a[5] + a[6] * a[6]);
  const double nb = std::sqrt(b[3] * b[3] + b[4] * b[4] + b[5] * b[5] + b[6] * b[6]);
  const double aw = a[3] / na, ax = a[4] / na, ay = a[5] / na, az = a[6] / na;
  const double bw = b[3] / nb, bx = b[4] / nb, by = b[5] / nb, bz = b[6] / nb;
  // d = a * conj(b); its angle 2 atan2(|vec d|, |w d|) is well conditioned for small angles.
  const double w = aw * bw + ax * bx + ay * by + az * bz;
  const double x = -aw * bx + ax * bw - ay * bz + az * by;
  const double y = -aw * by + ax * bz + ay * bw - az * bx;
  const double z = -aw * bz - ax * by + ay * bx + az * bw;
  orientation = 2.0 * std::atan2(std::sqrt(x * x + y * y + z * z), std::fabs(w));
}

template <class Chain>
bool check_fk_at_zero(kiln::plugin::Message &message) {
  constexpr int N = Chain::kDof;
  double q[N] = {}, p[3], R[9];
  Chain::template fk<double>(q, p, R);
  double worst = 0;
  for (int i = 0; i < 3; ++i) worst = std::fmax(worst, std::fabs(p[i] - Chain::kTipAtZeroPosition[i]));
  for (int i = 0; i < 9; ++i) worst = std::fmax(worst, std::fabs(R[i] - Chain::kTipAtZeroRotation[i]));
  if (!(worst <= kZeroTolerance)) {
    message.format("selftest: fk at q = 0 puts the tip at (%.9g, %.9g, %.9g), the model at (%.9g, %.9g, %.9g): "
                   "off by %.3g, allowed %.3g",
                   p[0], p[1], p[2], Chain::kTipAtZeroPosition[0], Chain::kTipAtZeroPosition[1],
                   Chain::kTipAtZeroPosition[2], worst, kZeroTolerance);
    return false;
  }
  float qf[N] = {}, pf[3], Rf[9];
  Chain::template fk<float>(qf, pf, Rf);
  worst = 0;
  for (int i = 0; i < 3; ++i) worst = std::fmax(worst, std::fabs(static_cast<double>(pf[i]) - p[i]));
  for (int i = 0; i < 9; ++i) worst = std::fmax(worst, std::fabs(static_cast<double>(Rf[i]) - R[i]));
  if (!(worst <= kFloatTolerance)) {
    message.format("selftest: float fk at q = 0 differs from double fk by %.3g, allowed %.3g", worst, kFloatTolerance);
    return false;
  }
  return true;
}

// Solve: kiln_status(const kiln_ik_problem &, const kiln_ik_result &, kiln::plugin::Message &),
// the solver's own path. max_batch: what activate reserved (the test solves min(kTargets, it)).
// On success message says what passed.
template <class Chain, class Solve>
kiln_status run(uint32_t max_batch, const Settings &defaults, Solve &&solve, kiln::plugin::Message &message) {
  constexpr int N = Chain::kDof;
  if (!check_fk_at_zero<Chain>(message)) return KILN_ERR_INTERNAL;
  const uint32_t count = max_batch < kTargets ? max_batch : kTargets;
  if (count == 0) {
    message.set("selftest: passed: fk at q = 0; no target solved (max_batch is 0)");
    return KILN_OK;
  }
  std::vector<double> truth(size_t{count} * N), wanted(size_t{count} * KILN_IK_POSE_SIZE);
  kiln_ik::HostBatch batch(count, N);
  std::vector<float> near(truth.size());
  std::vector<float> &targets = batch.targets, &q = batch.q, &position_error = batch.position_error,
                     &orientation_error = batch.orientation_error;
  const std::vector<uint8_t> &converged = batch.converged;
  const std::vector<uint32_t> &iterations = batch.iterations;
  for (uint32_t k = 0; k < count; ++k) {
    double *t = truth.data() + size_t{k} * N;
    configuration<Chain>(k, t);
    double p[3], R[9];
    Chain::template fk<double>(t, p, R);
    double *pose = wanted.data() + size_t{k} * KILN_IK_POSE_SIZE;
    to_pose(p, R, pose);
    for (int i = 0; i < KILN_IK_POSE_SIZE; ++i) {
      targets[size_t{k} * KILN_IK_POSE_SIZE + i] = static_cast<float>(pose[i]);
      pose[i] = static_cast<double>(targets[size_t{k} * KILN_IK_POSE_SIZE + i]);  // judge against what was asked
    }
    for (int j = 0; j < N; ++j) near[size_t{k} * N + j] = static_cast<float>(t[j] + ((j + k) % 2 == 0 ? 0.1 : -0.1));
  }
  kiln_ik_options options{};
  options.struct_size = sizeof options;
  options.random_seed = kRandomKey;
  kiln_ik_problem &problem = batch.problem;
  kiln_ik_result &result = batch.result;
  problem.options = &options;
  const double allowed_position = defaults.position_tolerance + kPositionSlack;
  const double allowed_orientation = defaults.orientation_tolerance + kOrientationSlack;
  uint32_t most_iterations = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const char *start = pass == 0 ? "cold" : "near";
    problem.initial_q = pass == 0 ? nullptr : near.data();
    const kiln_status status = solve(problem, result, message);
    if (status != KILN_OK) return status;  // the solve's own message
    for (uint32_t k = 0; k < count; ++k) {
      const float *answer = q.data() + size_t{k} * N;
      double qd[N], p[3], R[9], reached[KILN_IK_POSE_SIZE];
      bool inside = true;
      for (int j = 0; j < N; ++j) {
        qd[j] = static_cast<double>(answer[j]);
        inside = inside && qd[j] >= Chain::kLower[j] && qd[j] <= Chain::kUpper[j];
      }
      Chain::template fk<double>(qd, p, R);
      to_pose(p, R, reached);
      double position = 0, orientation = 0;
      pose_distance(wanted.data() + size_t{k} * KILN_IK_POSE_SIZE, reached, position, orientation);
      if (converged[k] != 1) {
        message.format("selftest: %s target %u of %u did not converge in %u iterations: it reports %.3g m / %.3g rad "
                       "from the target, allowed %.3g m / %.3g rad",
                       start, k, count, iterations[k], static_cast<double>(position_error[k]),
                       static_cast<double>(orientation_error[k]), static_cast<double>(defaults.position_tolerance),
                       static_cast<double>(defaults.orientation_tolerance));
        return KILN_ERR_INTERNAL;
      }
      if (!inside) {
        message.format("selftest: %s target %u of %u: the answer leaves the joint limits", start, k, count);
        return KILN_ERR_INTERNAL;
      }
      if (!(position <= allowed_position) || !(orientation <= allowed_orientation)) {
        message.format("selftest: %s target %u of %u: the answer's tip is %.3g m / %.3g rad from the target by the "
                       "double fk, allowed %.3g m / %.3g rad (the solver reported %.3g m / %.3g rad, converged)",
                       start, k, count, position, orientation, allowed_position, allowed_orientation,
                       static_cast<double>(position_error[k]), static_cast<double>(orientation_error[k]));
        return KILN_ERR_INTERNAL;
      }
      const double mismatch = std::fmax(std::fabs(position - static_cast<double>(position_error[k])),
                                        std::fabs(orientation - static_cast<double>(orientation_error[k])));
      if (!(mismatch <= kOrientationSlack)) {
        message.format("selftest: %s target %u of %u: the solver reported %.3g m / %.3g rad, the double fk finds "
                       "%.3g m / %.3g rad",
                       start, k, count, static_cast<double>(position_error[k]),
                       static_cast<double>(orientation_error[k]), position, orientation);
        return KILN_ERR_INTERNAL;
      }
      if (iterations[k] > most_iterations) most_iterations = iterations[k];
    }
  }
  message.format("selftest: passed: fk at q = 0 within %.0e; %u targets cold and %u from a nearby q converged within "
                 "%.3g m / %.3g rad (at most %u iterations)",
                 kZeroTolerance, count, count, allowed_position, allowed_orientation, most_iterations);
  return KILN_OK;
}

}  // namespace selftest
}  // namespace kiln_ik
