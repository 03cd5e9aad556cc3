// kiln IK plugin: the host-side pieces both forms share: the model's limits as the solver uses
// them and where each per-target array lives inside one reservation (device or
// staging). Plain C++ (no CUDA header).
#pragma once

#include <stdint.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "ik_params.hpp"
#include "kiln/ext/ik.h"

namespace {

// The model's limits as floats, rounded inwards so that a clamped float is inside the model's
// (double) limits.
inline FloatLimits float_limits() {
  FloatLimits limits{};
  for (int j = 0; j < kDof; ++j) {
    float lower = static_cast<float>(Chain::kLower[j]);
    float upper = static_cast<float>(Chain::kUpper[j]);
    if (static_cast<double>(lower) < Chain::kLower[j]) lower = std::nextafter(lower, INFINITY);
    if (static_cast<double>(upper) > Chain::kUpper[j]) upper = std::nextafter(upper, -INFINITY);
    limits.lower[j] = lower;
    limits.upper[j] = upper;
    if (Chain::kJointTypes[j] == Chain::kContinuous) limits.wrap |= 1u << j;
  }
  return limits;
}

// Offsets of the per-target arrays inside one reservation (device or staging), 256-byte aligned.
struct Layout {
  size_t targets, initial_q, q, position_error, orientation_error, converged, iterations, warm_q, warm_valid, total;
  explicit Layout(size_t batch) {
    size_t at = 0;
    const auto take = [&at](size_t bytes) {
      const size_t offset = at;
      at += (bytes + 255) / 256 * 256;
      return offset;
    };
    targets = take(batch * KILN_IK_POSE_SIZE * sizeof(float));
    initial_q = take(batch * kDof * sizeof(float));
    q = take(batch * kDof * sizeof(float));
    position_error = take(batch * sizeof(float));
    orientation_error = take(batch * sizeof(float));
    converged = take(batch * sizeof(uint8_t));
    iterations = take(batch * sizeof(uint32_t));
    warm_q = take(batch * kDof * sizeof(float));
    warm_valid = take(batch * sizeof(uint8_t));
    total = at;
  }
};

struct Arrays {
  float *targets = nullptr, *initial_q = nullptr, *q = nullptr, *position_error = nullptr,
        *orientation_error = nullptr;
  uint8_t *converged = nullptr;
  uint32_t *iterations = nullptr;
  float *warm_q = nullptr;  // the slots' last solutions: authoritative on the device, else in host memory
  uint8_t *warm_valid = nullptr;
  static Arrays carve(unsigned char *base, const Layout &layout) {
    Arrays a;
    a.targets = reinterpret_cast<float *>(base + layout.targets);
    a.initial_q = reinterpret_cast<float *>(base + layout.initial_q);
    a.q = reinterpret_cast<float *>(base + layout.q);
    a.position_error = reinterpret_cast<float *>(base + layout.position_error);
    a.orientation_error = reinterpret_cast<float *>(base + layout.orientation_error);
    a.converged = base + layout.converged;
    a.iterations = reinterpret_cast<uint32_t *>(base + layout.iterations);
    a.warm_q = reinterpret_cast<float *>(base + layout.warm_q);
    a.warm_valid = base + layout.warm_valid;
    return a;
  }
};

}  // namespace
