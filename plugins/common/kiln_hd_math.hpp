// kiln plugins: the math functions solver code calls alike on the host and on the device (nvcc,
// NVRTC, g++): the device's float or double function (sqrtf / sqrt, ...) under __CUDA_ARCH__, the
// host's std:: one otherwise, so that a templated solver step runs the same operations on both.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define KILN_PLUGIN_HD __host__ __device__ __forceinline__
#else
#define KILN_PLUGIN_HD inline
#endif

namespace kiln_plugin_common {
namespace hd {

KILN_PLUGIN_HD float sqrt_(float x) {
#if defined(__CUDA_ARCH__)
  return ::sqrtf(x);
#else
  return std::sqrt(x);
#endif
}
KILN_PLUGIN_HD double sqrt_(double x) {
#if defined(__CUDA_ARCH__)
  return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}
KILN_PLUGIN_HD float atan2_(float y, float x) {
#if defined(__CUDA_ARCH__)
  return ::atan2f(y, x);
#else
  return std::atan2(y, x);
#endif
}
KILN_PLUGIN_HD double atan2_(double y, double x) {
#if defined(__CUDA_ARCH__)
  return ::atan2(y, x);
#else
  return std::atan2(y, x);
#endif
}
KILN_PLUGIN_HD float floor_(float x) {
#if defined(__CUDA_ARCH__)
  return ::floorf(x);
#else
  return std::floor(x);
#endif
}
KILN_PLUGIN_HD double floor_(double x) {
#if defined(__CUDA_ARCH__)
  return ::floor(x);
#else
  return std::floor(x);
#endif
}
KILN_PLUGIN_HD bool finite_(float x) {
#if defined(__CUDA_ARCH__)
  return ::isfinite(x);
#else
  return std::isfinite(x);
#endif
}

}  // namespace hd
}  // namespace kiln_plugin_common
