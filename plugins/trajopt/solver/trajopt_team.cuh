// kiln TrajOpt plugin: the "team" one (problem, seed) is solved by, so that the solver is one source
// for the device and the host path. Every loop of the solver is team-strided (for i = rank; i < n;
// i += size) and every phase ends with sync(); reductions return the same value to every member.
//   SerialTeam: the host path (activate(-1)): one member, sync is nothing.
//   BlockTeam:  a CUDA thread block (one block per (problem, seed)); its reductions use a
//               32-float shared array the kernel provides.
// BlockTeam's members are __host__ __device__ with the device work under __CUDA_ARCH__ so that the
// solver's templates, instantiated for both sides by nvcc, compile on both; the host side of
// BlockTeam is never called.
#pragma once

#include <cmath>

#include "trajopt_params.hpp"

namespace kiln_trajopt {

struct SerialTeam {
  KILN_TRAJOPT_HD int rank() const { return 0; }
  KILN_TRAJOPT_HD int size() const { return 1; }
  KILN_TRAJOPT_HD void sync() const {}
  KILN_TRAJOPT_HD int lane() const { return 0; }  // rank within the lead warp (-1: not in it)
  KILN_TRAJOPT_HD int lanes() const { return 1; }
  KILN_TRAJOPT_HD void warp_sync() const {}
  KILN_TRAJOPT_HD float sum(float v) const { return v; }
  KILN_TRAJOPT_HD float max(float v) const { return v; }
  KILN_TRAJOPT_HD float broadcast(float v) const { return v; }  // rank 0's value
};

struct BlockTeam {
  float *reduce;  // 32 floats of shared memory

  KILN_TRAJOPT_HD int rank() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(threadIdx.x);
#else
    return 0;
#endif
  }
  KILN_TRAJOPT_HD int size() const {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(blockDim.x);
#else
    return 1;
#endif
  }
  KILN_TRAJOPT_HD void sync() const {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
  KILN_TRAJOPT_HD int lane() const { return rank() < 32 ? rank() : -1; }
  KILN_TRAJOPT_HD int lanes() const { return 32; }
  KILN_TRAJOPT_HD void warp_sync() const {
#if defined(__CUDA_ARCH__)
    __syncwarp();
#endif
  }
  KILN_TRAJOPT_HD float sum(float v) const { return combine(v, false); }
  KILN_TRAJOPT_HD float max(float v) const { return combine(v, true); }
  KILN_TRAJOPT_HD float broadcast(float v) const {
#if defined(__CUDA_ARCH__)
    if (threadIdx.x == 0) reduce[0] = v;
    __syncthreads();
    v = reduce[0];
    __syncthreads();
#endif
    return v;
  }

 private:
  KILN_TRAJOPT_HD float combine(float v, bool take_max) const {
#if defined(__CUDA_ARCH__)
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, v, offset);
      v = take_max ? fmaxf(v, other) : v + other;
    }
    const int warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    if ((threadIdx.x & 31) == 0) reduce[warp] = v;
    __syncthreads();
    v = reduce[0];
    for (int w = 1; w < warps; ++w) v = take_max ? fmaxf(v, reduce[w]) : v + reduce[w];
    __syncthreads();
#else
    (void)take_max;
#endif
    return v;
  }
};

}  // namespace kiln_trajopt
