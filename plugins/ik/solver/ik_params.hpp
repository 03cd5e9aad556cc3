// kiln IK plugin: what one batch solve takes (KernelParams), shared by every compiler that sees
// the solver: nvcc (ik_plugin.cu, the kernel and the host fallback), NVRTC (ik_kernels.cu, the
// split form's device images) and a plain C++ compiler (ik_split_plugin.cpp, the split form's host
// part). KernelParams crosses from the host part to an NVRTC kernel as one by-value launch
// parameter, so it holds only fixed-width scalars, floats and pointers (the same layout on x86-64,
// aarch64 and the device); the split host part checks its size against the kernel's at activate.
// No CUDA header: the robot comes from the generated kiln_fk_chain.cuh of the translation unit.
#pragma once

#include <stdint.h>  // under NVRTC: solver/rtc/stdint.h

#include "ik_core.cuh"
#include "kiln/ext/ik.h"
#include "kiln_fk_chain.cuh"
#include "kiln_joint_limits.hpp"

namespace {

using Chain = kiln_fk::Chain;
constexpr int kDof = Chain::kDof;
static_assert(kDof >= 1 && kDof <= kiln_plugins::kIkMaxJoints, "the solver handles chains of 1 to kIkMaxJoints joints");
using FloatLimits = kiln_ik::Limits<float, kDof>;

constexpr unsigned kBlock = 128;  // threads per block (4 warps)
#ifdef KILN_IK_FAULT_WRONG_ANSWERS
// Deliberately broken: the answer's last joint is moved after the solve, while the errors and the
// converged flag reported are those of the unmoved answer, as a solver bug would report them.
constexpr float kFaultOffset = 0.05f;
#else
constexpr float kFaultOffset = 0.0f;
#endif

struct KernelParams {
  uint32_t count;
  uint32_t seeds;
  uint32_t group_shift;  // log2 of the lanes per target
  kiln_ik::Settings settings;
  FloatLimits limits;
  const float *targets;
  const float *initial_q;  // nullptr: seed 0 from the middle of the ranges
  float *q;
  float *position_error;     // may be nullptr (device memory mode)
  float *orientation_error;  // may be nullptr
  uint8_t *converged;        // may be nullptr
  uint32_t *iterations;      // may be nullptr
  // The slots' last solutions (max_batch * kDof floats, max_batch flags). nullptr: neither read
  // nor recorded (the self-test, the warm-up launch).
  float *warm_q;
  uint8_t *warm_valid;
  bool warm_start;  // seed 0 from warm_q where the slot is valid and initial_q is nullptr
};

#if !defined(__CUDACC_RTC__)  // host code: NVRTC compiles device code only
inline uint32_t group_shift_for(uint32_t seeds) {
  uint32_t shift = 0;
  while ((1u << shift) < seeds) ++shift;
  return shift;
}
#endif

}  // namespace
