// Compile-only: the generated dynamics header as device code (nvcc, the plugins' archs), in both
// scalar types, every entry point; the build fails if the header stops being device-usable.
// (No GPU is needed to build it; nothing runs it.)
#include "kiln_rnea_chain.cuh"

namespace kiln_robotgen_device_check {
using Chain = kiln_rnea::Chain;

template <class T>
__global__ void all_entry_points(const T *q, const T *qd, const T *qdd, const T *wrench, T *tau, T *M, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const T g[3] = {static_cast<T>(0), static_cast<T>(0), static_cast<T>(-9.81)};
  const int at = i * Chain::kDof;
  Chain::rnea(q + at, qd + at, qdd + at, tau + at);
  Chain::rnea(q + at, qd + at, qdd + at, g, tau + at);
  Chain::rnea_tip_wrench(q + at, qd + at, qdd + at, g, wrench + 6 * i, tau + at);
  Chain::gravity_torques(q + at, tau + at);
  Chain::mass_matrix(q + at, M + at * Chain::kDof);
}
// Explicit instantiations: both scalar types are compiled for the device.
template __global__ void all_entry_points<float>(const float *, const float *, const float *, const float *, float *,
                                                 float *, int);
template __global__ void all_entry_points<double>(const double *, const double *, const double *, const double *,
                                                  double *, double *, int);
}  // namespace kiln_robotgen_device_check
