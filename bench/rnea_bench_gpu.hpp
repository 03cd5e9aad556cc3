// The RNEA bench's GPU side (rnea_bench_gpu.cu, the CUDA runtime linked statically): batched
// kiln_rnea::Chain::rnea, one thread per evaluation, in float and in double, timed with CUDA
// events. Plain C++ here, so that the bench's host code is compiled by the host compiler alone.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kiln_bench_rnea {

// Joint-major (structure of arrays): joint j of state i at [j * stride + i], so that neighbouring
// GPU threads read neighbouring words; a batch of n <= stride states is the first n of each row.
template <class T>
struct States {
  std::size_t stride = 0;
  std::vector<T> q, qd, qdd;
};

struct GpuInfo {
  bool ok = false;
  std::string detail;  // why not, when !ok
  std::string name;
  int sm_count = 0, major = 0, minor = 0;
  double memory_gib = 0;
};
GpuInfo probe_gpu();

struct GpuTiming {
  std::size_t count = 0;
  bool ok = false;
  std::string error;
  int block = 0, registers = 0;
  // Median and min of the timed launches, no transfers: kernel_ms from the host's launch on
  // (record, launch, record), gpu_ms the GPU's time alone (the launch queued behind a held stream,
  // gpu_queued_timer.cuh).
  double kernel_ms = 0, kernel_min_ms = 0;
  double gpu_ms = 0, gpu_min_ms = 0;
  double transfer_ms = 0;                        // median: states in + kernel + torques out
  double empty_kernel_ms = 0, empty_gpu_ms = 0;  // an empty kernel timed alike: the floors
  bool hold_timed_out = false;                   // a held stream ran out before its release: gpu_ms may hold launch time
  bool pinned = false;                      // the host arrays were page-locked (else pageable)
  double per_second() const { return kernel_ms > 0 ? static_cast<double>(count) / (kernel_ms * 1e-3) : 0; }
  double per_second_with_transfers() const {
    return transfer_ms > 0 ? static_cast<double>(count) / (transfer_ms * 1e-3) : 0;
  }
};

// For each batch size (each <= states.stride): 3 untimed launches, then `runs` timed launches
// (kernel only) both ways and 3 timed round trips with transfers. `tau` (joint-major, stride
// states.stride) receives the torques of the largest batch. The host arrays are pinned
// (cudaHostRegister) for the duration of the call where the system allows it.
std::vector<GpuTiming> run_gpu(const States<float> &states, const std::vector<std::size_t> &sizes, int runs,
                               std::vector<float> &tau);
std::vector<GpuTiming> run_gpu(const States<double> &states, const std::vector<std::size_t> &sizes, int runs,
                               std::vector<double> &tau);

}  // namespace kiln_bench_rnea
