// kiln IK tests: one solve of random reachable targets on an active kiln.ik/1 instance, judged
// by the plugin's own fk (shared by the split-form tests, native and under the aarch64 emulator).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <kiln/ext/ik.h>
#include <kiln/module.hpp>

namespace kiln::test::ik {

struct PoseError {
  double position;     // m
  double orientation;  // rad
};

// Between a target pose t and a reached pose p (x y z qw qx qy qz each): the distance, and the
// angle of d = t * conj(p), 2 atan2(|vec d|, |w d|) (well conditioned for small angles).
inline PoseError pose_error(const float *t, const float *p) {
  const double dx = double{t[0]} - p[0], dy = double{t[1]} - p[1], dz = double{t[2]} - p[2];
  const double tw = t[3], tx = t[4], ty = t[5], tz = t[6], pw = p[3], px = p[4], py = p[5], pz = p[6];
  const double w = tw * pw + tx * px + ty * py + tz * pz;
  const double x = -tw * px + tx * pw - ty * pz + tz * py;
  const double y = -tw * py + tx * pz + ty * pw - tz * px;
  const double z = -tw * pz - tx * py + ty * px + tz * pw;
  return {std::sqrt(dx * dx + dy * dy + dz * dz), 2.0 * std::atan2(std::sqrt(x * x + y * y + z * z), std::fabs(w))};
}

}  // namespace kiln::test::ik

namespace kiln::test::ik_split {

struct Outcome {
  std::vector<float> targets, q, position_error, orientation_error;
  std::vector<uint8_t> converged;
  std::vector<uint32_t> iterations;
  std::size_t good = 0;       // inside the limits and within 1 mm / 0.01 rad by the double fk
  std::size_t reported = 0;   // converged, as the solver says
  double worst_report_mismatch = 0;  // |reported - recomputed| position error (m)
  double mean_iterations = 0;
};

// Solves `count` targets (fk of random in-limit joint vectors drawn from `seed`) on an active
// instance with the plugin's default options and judges every answer.
inline Outcome solve_random(const kiln_ik_v1 &ik, kiln_instance *instance, uint32_t count, uint64_t seed) {
  const uint32_t dof = ik.dof(instance);
  std::vector<double> lower(dof), upper(dof);
  for (uint32_t j = 0; j < dof; ++j) {
    kiln_ik_joint_info info{};
    info.struct_size = sizeof info;
    REQUIRE(ik.joint_info(instance, j, &info) == KILN_OK);
    lower[j] = info.lower;
    upper[j] = info.upper;
  }
  std::mt19937_64 rng(seed);
  std::vector<float> truth(std::size_t{count} * dof);
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const std::size_t j = i % dof;
    truth[i] = static_cast<float>(std::uniform_real_distribution<double>(lower[j], upper[j])(rng));
  }
  Outcome out;
  out.targets.resize(std::size_t{count} * KILN_IK_POSE_SIZE);
  out.q.resize(truth.size());
  out.position_error.resize(count);
  out.orientation_error.resize(count);
  out.converged.resize(count);
  out.iterations.resize(count);
  REQUIRE(ik.fk(instance, truth.data(), count, out.targets.data()) == KILN_OK);
  kiln_ik_problem problem{};
  problem.struct_size = sizeof problem;
  problem.count = count;
  problem.memory = KILN_IK_MEMORY_HOST;
  problem.targets = out.targets.data();
  kiln_ik_result result{};
  result.struct_size = sizeof result;
  result.q = out.q.data();
  result.position_error = out.position_error.data();
  result.orientation_error = out.orientation_error.data();
  result.converged = out.converged.data();
  result.iterations = out.iterations.data();
  char message[512] = "";
  REQUIRE_MESSAGE(ik.solve(instance, &problem, &result, message, sizeof message) == KILN_OK, message);

  std::vector<float> poses(out.targets.size());
  REQUIRE(ik.fk(instance, out.q.data(), count, poses.data()) == KILN_OK);
  double iterations = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const auto [position, orientation] = ik::pose_error(out.targets.data() + i * KILN_IK_POSE_SIZE,
                                                        poses.data() + i * KILN_IK_POSE_SIZE);
    bool inside = true;
    for (std::size_t j = 0; j < dof; ++j) inside = inside && out.q[i * dof + j] >= lower[j] && out.q[i * dof + j] <= upper[j];
    out.good += (inside && position < 1e-3 && orientation < 1e-2) ? 1 : 0;
    out.reported += out.converged[i] != 0 ? 1 : 0;
    out.worst_report_mismatch = std::max(out.worst_report_mismatch, std::fabs(position - out.position_error[i]));
    iterations += out.iterations[i];
  }
  out.mean_iterations = count > 0 ? iterations / count : 0;
  return out;
}

inline const kiln_ik_v1 *ik_of(const Instance &instance) { return instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID); }

}  // namespace kiln::test::ik_split
