// One robot's entry for kiln_bench_rnea --kdl (rnea_bench_kdl.hpp): the generated header of
// KILN_BENCH_RNEA_KDL_ID (bench/CMakeLists.txt puts <build>/bench/<id>/ on the include path)
// compiled by the host compiler, in double and in float, and its metadata. Built once per robot
// (an object library each), so no symbol here may be outside the robot's own namespace.
#include <cstddef>

#include "kiln_rnea_chain.cuh"  // <build>/bench/<id>/
#include "rnea_bench_kdl.hpp"

#ifndef KILN_BENCH_RNEA_KDL_ID
#error "KILN_BENCH_RNEA_KDL_ID (the robot's namespace) is set by bench/CMakeLists.txt"
#endif
#define KILN_BENCH_RNEA_KDL_TEXT(id) KILN_BENCH_RNEA_KDL_TEXT_(id)
#define KILN_BENCH_RNEA_KDL_TEXT_(id) #id

namespace kiln_bench_rnea {
namespace KILN_BENCH_RNEA_KDL_ID {

// rnea_bench_kdl_chain.cu, the same robot.
std::string gpu_float(const std::vector<float> &q, const std::vector<float> &qd, const std::vector<float> &qdd,
                      std::size_t n, std::vector<float> &tau);
std::string gpu_double(const std::vector<double> &q, const std::vector<double> &qd, const std::vector<double> &qdd,
                       std::size_t n, std::vector<double> &tau);

namespace {

using KdlChainOfThisRobot = kiln_rnea::Chain;

template <class T>
void kdl_host_rnea(const T *q, const T *qd, const T *qdd, std::size_t n, T *tau) {
  constexpr std::size_t kDof = KdlChainOfThisRobot::kDof;
  for (std::size_t i = 0; i < n; ++i) {
    KdlChainOfThisRobot::rnea(q + i * kDof, qd + i * kDof, qdd + i * kDof, tau + i * kDof);
  }
}

void kdl_host_double(const double *q, const double *qd, const double *qdd, std::size_t n, double *tau) {
  kdl_host_rnea(q, qd, qdd, n, tau);
}
void kdl_host_float(const float *q, const float *qd, const float *qdd, std::size_t n, float *tau) {
  kdl_host_rnea(q, qd, qdd, n, tau);
}

}  // namespace

const KdlChain &chain() {
  using C = KdlChainOfThisRobot;
  static const KdlChain entry{KILN_BENCH_RNEA_KDL_TEXT(KILN_BENCH_RNEA_KDL_ID),
                              C::kRobot,
                              C::kBaseLink,
                              C::kTipLink,
                              C::kSource,
                              C::kDof,
                              C::kJointNames,
                              C::kGravity,
                              KILN_BENCH_RNEA_KDL_URDF_SHA256,
                              kdl_host_double,
                              kdl_host_float,
                              gpu_float,
                              gpu_double};
  return entry;
}

}  // namespace KILN_BENCH_RNEA_KDL_ID
}  // namespace kiln_bench_rnea
