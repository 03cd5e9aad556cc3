// kiln plugins: the unit quaternion of a rotation matrix, one implementation for host and device
// code alike (nvcc, NVRTC, g++): the IK kernels' pose error, the self-tests' poses and
// kiln.robotmodel/1's fk. No library call beyond sqrt (kiln_hd_math.hpp).
#pragma once

#include "kiln_hd_math.hpp"

namespace kiln_plugin_common {

// Unit quaternion (w >= 0) of a rotation matrix (row-major), Shepperd's method.
template <class T>
KILN_PLUGIN_HD void matrix_to_quaternion(const T *M, T &w, T &x, T &y, T &z) {
  using hd::sqrt_;
  const T one = static_cast<T>(1), quarter = static_cast<T>(0.25);
  const T trace = M[0] + M[4] + M[8];
  if (trace > 0) {
    const T s = sqrt_(trace + one) * 2;
    w = quarter * s, x = (M[7] - M[5]) / s, y = (M[2] - M[6]) / s, z = (M[3] - M[1]) / s;
  } else if (M[0] > M[4] && M[0] > M[8]) {
    const T s = sqrt_(one + M[0] - M[4] - M[8]) * 2;
    w = (M[7] - M[5]) / s, x = quarter * s, y = (M[1] + M[3]) / s, z = (M[2] + M[6]) / s;
  } else if (M[4] > M[8]) {
    const T s = sqrt_(one + M[4] - M[0] - M[8]) * 2;
    w = (M[2] - M[6]) / s, x = (M[1] + M[3]) / s, y = quarter * s, z = (M[5] + M[7]) / s;
  } else {
    const T s = sqrt_(one + M[8] - M[0] - M[4]) * 2;
    w = (M[3] - M[1]) / s, x = (M[2] + M[6]) / s, y = (M[5] + M[7]) / s, z = quarter * s;
  }
  if (w < 0) w = -w, x = -x, y = -y, z = -z;
}

}  // namespace kiln_plugin_common
