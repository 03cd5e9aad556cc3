// The RNEA bench's CPU side: the random states both precisions evaluate, the baseline (the same
// generated kiln_rnea_chain.cuh in double on the CPU, one thread and all cores) and the accuracy of
// the GPU's torques against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_thread_pool.hpp"
#include "rnea_bench_gpu.hpp"

namespace kiln_bench_rnea {

using kiln_bench::for_each_chunk;
using kiln_bench::ThreadPool;

// count states as tests/robotgen draws them (q within the position limits, qd within the velocity
// limits, qdd within +-10 rad/s^2), drawn in double and rounded to float, the double states then
// set to the rounded values: both precisions evaluate exactly the same states. Deterministic for
// a seed whatever the thread count (each chunk of states has its own generator).
void make_states(std::size_t count, uint64_t seed, ThreadPool &pool, States<double> &exact, States<float> &single);

struct CpuTiming {
  unsigned threads = 1;
  std::size_t count = 0;
  double ms = 0;  // median pass
  bool ok = false;
  std::string failure;
  double per_second() const { return ms > 0 ? static_cast<double>(count) / (ms * 1e-3) : 0; }
};

// The CPU double RNEA of the first `count` states (copied state-major, outside the timing), median
// of `passes`; pool nullptr: the calling thread alone. tau: state-major, count x kDof.
CpuTiming time_cpu(const States<double> &states, std::size_t count, int passes, ThreadPool *pool,
                   std::vector<double> &tau);

struct Accuracy {
  std::size_t compared = 0;
  double max_abs = 0;         // N m
  double worst_relative = 0;  // max over states of |dtau| / max(1 N m, the state's largest |tau|)
  double torque_scale = 0;    // the largest |tau| of all compared states
  bool finite = true;
};
// GPU torques (joint-major, stride) against the CPU's (state-major) on the first `count` states.
Accuracy compare(const std::vector<float> &gpu, std::size_t stride, const std::vector<double> &cpu, std::size_t count);
Accuracy compare(const std::vector<double> &gpu, std::size_t stride, const std::vector<double> &cpu, std::size_t count);

int dof();
const char *robot();

}  // namespace kiln_bench_rnea
