// The RNEA bench's kernel: batched Chain::rnea (the generated kiln_rnea_chain.cuh under kGravity),
// one thread per evaluation, states and torques joint-major (joint j of state i at
// [j * stride + i]: neighbouring threads read neighbouring words). Shared by the timed bench
// (rnea_bench_gpu.cu) and the KDL comparison (rnea_bench_kdl_chain.cu), so that --kdl checks the
// device code that is timed. File-local (each .cu compiles its own copy for its chain).
#pragma once

#include <cstddef>

namespace kiln_bench_rnea {
namespace {

template <class Chain, class T>
__global__ void rnea_batch(const T *__restrict__ q, const T *__restrict__ qd, const T *__restrict__ qdd,
                           T *__restrict__ tau, size_t count, size_t stride) {
  constexpr int kDof = Chain::kDof;
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  T a[kDof], v[kDof], dv[kDof], out[kDof];
#pragma unroll
  for (int j = 0; j < kDof; ++j) {
    a[j] = q[j * stride + i];
    v[j] = qd[j * stride + i];
    dv[j] = qdd[j * stride + i];
  }
  Chain::rnea(a, v, dv, out);
#pragma unroll
  for (int j = 0; j < kDof; ++j) tau[j * stride + i] = out[j];
}

}  // namespace
}  // namespace kiln_bench_rnea
