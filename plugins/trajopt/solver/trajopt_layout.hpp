// kiln TrajOpt plugin: the buffers activate reserves for max_batch problems, carved from one block
// (device memory, and the same layout in pinned staging; host only: one host block). Each array
// starts on a 256-byte boundary.
#pragma once

#include <stdint.h>

#include <cstddef>

#include "trajopt_params.hpp"

namespace kiln_trajopt {

struct Arrays {
  // Inputs.
  float *q0 = nullptr, *qd0 = nullptr, *pose_goals = nullptr, *joint_goals = nullptr, *dt = nullptr, *initial = nullptr;
  uint8_t *goal_kinds = nullptr;
  float *track_poses = nullptr, *track_weights = nullptr;
  // Outputs.
  float *q = nullptr, *qd = nullptr, *torques = nullptr;
  float *position_error = nullptr, *orientation_error = nullptr, *position_violation = nullptr,
        *velocity_violation = nullptr, *torque_violation = nullptr, *cost = nullptr;
  uint8_t *converged = nullptr;
  uint32_t *iterations = nullptr;
  uint8_t *within_limits = nullptr;
  // The slots' last solutions.
  float *warm_q = nullptr;
  uint8_t *warm_valid = nullptr;
  // Solver scratch: device: every (problem, seed); host only: one seed, its band and the best.
  float *scratch = nullptr, *best = nullptr;
  Real *band = nullptr;
  SeedSummary *summaries = nullptr;
  uint32_t *done = nullptr;
};

// Offsets of every array in a block; carve() turns a block into Arrays.
class Layout {
 public:
  // seeds_scratch: (problem, seed) scratch areas (device: max_batch * KILN_TRAJOPT_MAX_SEEDS; host
  // only: 1; staging: 0). host_band: the host path's band and best trajectory.
  Layout(uint32_t max_batch, size_t seeds_scratch, bool host_band) {
    const size_t b = max_batch, traj = b * kKnots * kDof;
    const size_t scratch = seeds_scratch * ScratchLayout::kSize;
    const size_t sizes[kCount] = {
        b * kDof * 4, b * kDof * 4, b * KILN_TRAJOPT_POSE_SIZE * 4, b * kDof * 4, b * 4, b * kVars * 4, b,  // inputs
        b * kN * KILN_TRAJOPT_POSE_SIZE * 4, b * kN * 2 * 4,                                             // tracking
        traj * 4, traj * 4, traj * 4, b * 4, b * 4, b * 4, b * 4, b * 4, b * 4, b, b * 4, b,               // outputs
        b * kVars * 4, b,                                                                              // slots
        scratch * 4, seeds_scratch * sizeof(SeedSummary), seeds_scratch > 0 ? b * 4 : 0,                // device
        host_band ? size_t{kBandReals} * sizeof(Real) : 0, host_band ? size_t{kVars} * 4 : 0};          // host only
    for (int i = 0; i < kCount; ++i) {
      offsets_[i] = total_;
      total_ += (sizes[i] + 255) / 256 * 256;
    }
  }
  size_t total() const { return total_; }
  // The inputs (q0 .. track_weights), then the outputs (q .. within_limits), each group in this
  // order and at the same offsets in the device reservation and the staging (they precede the
  // scratch): a small instance's solve moves each group in one copy (inputs.hpp).
  Arrays carve(unsigned char *block) const {
    Arrays a;
    const auto at = [&](int i) { return block + offsets_[i]; };
    a.q0 = f(at(0)), a.qd0 = f(at(1)), a.pose_goals = f(at(2)), a.joint_goals = f(at(3)), a.dt = f(at(4));
    a.initial = f(at(5)), a.goal_kinds = at(6), a.track_poses = f(at(7)), a.track_weights = f(at(8));
    a.q = f(at(9)), a.qd = f(at(10)), a.torques = f(at(11)), a.position_error = f(at(12));
    a.orientation_error = f(at(13)), a.position_violation = f(at(14)), a.velocity_violation = f(at(15));
    a.torque_violation = f(at(16)), a.cost = f(at(17)), a.converged = at(18);
    a.iterations = reinterpret_cast<uint32_t *>(at(19)), a.within_limits = at(20);
    a.warm_q = f(at(21)), a.warm_valid = at(22);
    a.scratch = f(at(23)), a.summaries = reinterpret_cast<SeedSummary *>(at(24));
    a.done = reinterpret_cast<uint32_t *>(at(25));
    a.band = reinterpret_cast<Real *>(at(26)), a.best = f(at(27));
    return a;
  }

 private:
  static constexpr int kCount = 28;
  static float *f(unsigned char *p) { return reinterpret_cast<float *>(p); }
  size_t offsets_[kCount] = {};
  size_t total_ = 0;
};

}  // namespace kiln_trajopt
