// Host-side buffers of one kiln.ik/1 batch and the problem/result structs pointing at them,
// for hosts that solve from host memory (the demo, the tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kiln/ext/ik.h"

namespace kiln_ik {

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
