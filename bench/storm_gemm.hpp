// A GEMM storm for kiln_bench_isolation: a tiled SGEMM (n x n x n) enqueued back to back on a
// stream of its own, a few launches in flight, until told to stop, so that every SM the storm can
// reach stays busy. The same code runs in the bench's process (a thread) and in
// kiln_bench_storm (another process). CUDA runtime only: the bench's own code needs no CUDA header.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace kiln_bench::storm {

struct Device {
  std::string name;
  int sm_count = 0;
  int least_priority = 0;     // cudaDeviceGetStreamPriorityRange: the default (0)
  int greatest_priority = 0;  // the most urgent (e.g. -5)
};

// What `device` is; an error's words, empty on success. Creates the device's primary context.
std::string query_device(int device, Device &out);

struct Config {
  int device = 0;
  int n = 2048;           // rounded up to the kernel's tile (64)
  int in_flight = 4;
  int priority = 0;       // of the storm's stream
  // Use the context current on the calling thread (a partition's, inside run_inside) instead of
  // the device's primary context.
  bool current_context = false;
};

struct Progress {
  std::atomic<bool> running{false};  // the first GEMM completed: the storm is at full load
  std::atomic<bool> finished{false};
  std::atomic<std::uint64_t> launches{0};
  std::string error;  // written before `finished` is set
};

// Runs the storm on the calling thread until `stop` is set (or an error), then waits for the
// launches in flight and frees what it made. Errors go to progress.error.
void run(const Config &config, const std::atomic<bool> &stop, Progress &progress);

}  // namespace kiln_bench::storm
