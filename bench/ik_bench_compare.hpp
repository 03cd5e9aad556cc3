// The IK bench's side-by-side table: kiln's GPU IK, the Eigen reference and KDL's LMA, each on
// the 1024 and 8192 batches, one thread and all cores for the CPU solvers: success and time per
// target, and each row's speed against the Eigen reference and KDL's LMA (the peer baseline), each
// on one thread; where a baseline is skipped or failed the table says so instead of a ratio.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ik_bench_cpu.hpp"

namespace kiln_bench_ik {

struct GpuRow {
  uint32_t targets = 0;
  double ms = 0;  // median synchronous solve, copies included
  std::size_t good = 0;
};

struct Comparison {
  std::vector<GpuRow> gpu;  // kSmall, kLarge; empty without a device
  std::string gpu_absent;   // why there are no GPU rows
  // Per solver and thread count, the timings of the two batches (each at most --cpu-targets).
  struct CpuRow {
    CpuTiming at[2];
  };
  std::vector<CpuRow> cpu;
  int passes = 0;
  // KDL's FK against the generated chain's (sanity: both read the same URDF).
  bool fk_compared = false;
  double fk_position_difference = 0, fk_rotation_difference = 0;
  std::string fk_failure;
};

// Times the Eigen reference and KDL's LMA, one thread and `threads` threads (when > 1), on the
// first min(batch, cpu_targets) targets of each batch size.
Comparison compare_cpu_solvers(const std::vector<float> &targets, uint32_t cpu_targets, unsigned threads,
                               const std::string &urdf, int passes);

void print_comparison(const Comparison &comparison);
// JSON members (without braces, leading comma) for the bench's one-line summary.
std::string comparison_json(const Comparison &comparison);

}  // namespace kiln_bench_ik
