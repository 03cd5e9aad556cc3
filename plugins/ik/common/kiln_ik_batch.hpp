// Host-side buffers of one kiln.ik/1 batch and the problem/result structs pointing at them,
// for hosts that solve from host memory (the demos, the tests), and the pose error they judge
// answers by.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kiln/ext/ik.h"

namespace kiln_ik {

// Error between two kiln.ik/1 poses (x y z qw qx qy qz, quaternions normalised here): metres,
// and radians of the rotation target * conj(pose), as 2 atan2(|vec|, |w|) (well conditioned for
// small angles).
inline void pose_error(const float *target, const float *pose, double &position_error, double &orientation_error) {
  const double dx = double{target[0]} - pose[0], dy = double{target[1]} - pose[1], dz = double{target[2]} - pose[2];
  position_error = std::sqrt(dx * dx + dy * dy + dz * dz);
  double a[4], b[4];
  double na = 0, nb = 0;
  for (int k = 0; k < 4; ++k) {
    a[k] = target[3 + k], b[k] = pose[3 + k];
    na += a[k] * a[k], nb += b[k] * b[k];
  }
  na = std::sqrt(na), nb = std::sqrt(nb);
  for (int k = 0; k < 4; ++k) a[k] /= na, b[k] /= nb;
  const double w = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
  const double x = -a[0] * b[1] + a[1] * b[0] - a[2] * b[3] + a[3] * b[2];
  const double y = -a[0] * b[2] + a[1] * b[3] + a[2] * b[0] - a[3] * b[1];
  const double z = -a[0] * b[3] - a[1] * b[2] + a[2] * b[1] + a[3] * b[0];
  orientation_error = 2.0 * std::atan2(std::sqrt(x * x + y * y + z * z), std::fabs(w));
}

struct HostBatch {
  HostBatch(uint32_t count, size_t dof)
      : targets(size_t{count} * KILN_IK_POSE_SIZE), q(count * dof), position_error(count),
        orientation_error(count), converged(count), iterations(count) {
    problem.struct_size = sizeof problem;
    problem.count = count;
    problem.memory = KILN_IK_MEMORY_HOST;
    problem.targets = targets.data();
    result.struct_size = sizeof result;
    result.q = q.data();
    result.position_error = position_error.data();
    result.orientation_error = orientation_error.data();
    result.converged = converged.data();
    result.iterations = iterations.data();
  }
  // Vectors are sized once; the structs keep pointing at them.
  HostBatch(const HostBatch &) = delete;
  HostBatch &operator=(const HostBatch &) = delete;

  std::vector<float> targets;
  std::vector<float> q;
  std::vector<float> position_error;
  std::vector<float> orientation_error;
  std::vector<uint8_t> converged;
  std::vector<uint32_t> iterations;
  kiln_ik_problem problem{};
  kiln_ik_result result{};
};

}  // namespace kiln_ik
