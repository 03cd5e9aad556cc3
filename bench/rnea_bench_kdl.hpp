// kiln_bench_rnea --kdl: the generated chains the bench can evaluate on a KDL states file
// (rnea_kdl_file.hpp). One per robot, each compiled from rnea_bench_kdl_chain.cpp (the header in
// the host compiler: double and float) and rnea_bench_kdl_chain.cu (the bench's kernel,
// rnea_bench_kernel.cuh, on the GPU: fp32 and fp64) with that robot's generated header on the
// include path and KILN_BENCH_RNEA_KDL_ID naming it (bench/CMakeLists.txt). Plain C++ here.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kiln_bench_rnea {

struct KdlChain {
  const char *id;                // the bench's name: iiwa14, panda
  const char *robot, *base, *tip;  // the generated header's kRobot, kBaseLink, kTipLink
  const char *source;            // its kSource (the URDF's file name)
  int dof;
  const char *const *joint_names;
  const double *gravity;  // kGravity, what rnea(q, qd, qdd, tau) uses
  const char *urdf_sha256;  // of the URDF the header was generated from (at configure time)
  // The host-compiled header on n states, state-major (joint j of state i at [i * dof + j]).
  void (*cpu_double)(const double *q, const double *qd, const double *qdd, std::size_t n, double *tau);
  void (*cpu_float)(const float *q, const float *qd, const float *qdd, std::size_t n, float *tau);
  // The GPU on n states, joint-major (joint j of state i at [j * n + i]), as the timed bench
  // lays them out; returns "" or what failed (a CUDA error).
  std::string (*gpu_float)(const std::vector<float> &q, const std::vector<float> &qd, const std::vector<float> &qdd,
                           std::size_t n, std::vector<float> &tau);
  std::string (*gpu_double)(const std::vector<double> &q, const std::vector<double> &qd,
                            const std::vector<double> &qdd, std::size_t n, std::vector<double> &tau);
};

// Each robot's functions in a namespace of its own (KILN_BENCH_RNEA_KDL_ID); chain() is its entry.
namespace iiwa14 {
const KdlChain &chain();
}
namespace panda {
const KdlChain &chain();
}
inline std::vector<const KdlChain *> kdl_chains() { return {&iiwa14::chain(), &panda::chain()}; }

}  // namespace kiln_bench_rnea
