// The GEMM storm (storm_gemm.hpp), compiled once for kiln_bench_isolation and kiln_bench_storm
// (storm_main.cpp).
#include "storm_gemm.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace kiln_bench::storm {
namespace {

constexpr int kTile = 64;   // C tile per block
constexpr int kDepth = 16;  // k per shared-memory step
constexpr int kThreads = 256;

// C = A B, row-major, n a multiple of kTile. 16 x 16 threads, each 4 x 4 outputs strided by 16
// (neighbouring threads read neighbouring shared-memory words).
__global__ void __launch_bounds__(kThreads) sgemm(int n, const float *__restrict__ a, const float *__restrict__ b,
                                                  float *__restrict__ c) {
  __shared__ float as[kDepth][kTile + 1];
  __shared__ float bs[kDepth][kTile];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < n; k0 += kDepth) {
    for (int i = threadIdx.x; i < kTile * kDepth; i += kThreads) {
      const int r = i / kDepth, k = i % kDepth;
      as[k][r] = a[static_cast<size_t>(row0 + r) * n + k0 + k];
    }
    for (int i = threadIdx.x; i < kDepth * kTile; i += kThreads) {
      const int k = i / kTile, col = i % kTile;
      bs[k][col] = b[static_cast<size_t>(k0 + k) * n + col0 + col];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kDepth; ++k) {
      float x[4], y[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = as[k][ty + 16 * i], y[i] = bs[k][tx + 16 * i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += x[i] * y[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) c[static_cast<size_t>(row0 + ty + 16 * i) * n + col0 + tx + 16 * j] = acc[i][j];
}

__global__ void fill(size_t count, float *p, float value) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x) {
    p[i] = value * static_cast<float>(i % 7 + 1);
  }
}

std::string failed(const char *what, cudaError_t error) {
  return std::string(what) + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
}

}  // namespace

std::string query_device(int device, Device &out) {
  cudaDeviceProp props{};
  if (const cudaError_t e = cudaGetDeviceProperties(&props, device); e != cudaSuccess) {
    return failed("cudaGetDeviceProperties", e);
  }
  out.name = props.name;
  out.sm_count = props.multiProcessorCount;
  if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return failed("cudaSetDevice", e);
  if (const cudaError_t e = cudaDeviceGetStreamPriorityRange(&out.least_priority, &out.greatest_priority);
      e != cudaSuccess) {
    return failed("cudaDeviceGetStreamPriorityRange", e);
  }
  return {};
}

void run(const Config &config, const std::atomic<bool> &stop, Progress &progress) {
  const int n = (config.n + kTile - 1) / kTile * kTile;
  const size_t count = static_cast<size_t>(n) * n;
  const int in_flight = config.in_flight < 1 ? 1 : config.in_flight;
  cudaStream_t stream = nullptr;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  std::vector<cudaEvent_t> done(static_cast<size_t>(in_flight), nullptr);
  std::string error;
  // Each step in order; the first failure stops the storm and is reported.
  const auto step = [&](const char *what, cudaError_t e) {
    if (e != cudaSuccess && error.empty()) error = failed(what, e);
    return error.empty();
  };
  const bool ready = (config.current_context || step("cudaSetDevice", cudaSetDevice(config.device))) &&
                     step("cudaStreamCreateWithPriority",
                          cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, config.priority)) &&
                     step("cudaMalloc", cudaMalloc(&a, count * sizeof(float))) &&
                     step("cudaMalloc", cudaMalloc(&b, count * sizeof(float))) &&
                     step("cudaMalloc", cudaMalloc(&c, count * sizeof(float)));
  if (ready) {
    // Blocking-sync events: the storm thread sleeps while it waits for a slot, leaving the CPU to
    // the control thread.
    for (auto &event : done) {
      if (!step("cudaEventCreateWithFlags",
                cudaEventCreateWithFlags(&event, cudaEventBlockingSync | cudaEventDisableTiming))) {
        break;
      }
    }
  }
  if (error.empty()) {
    fill<<<256, 256, 0, stream>>>(count, a, 1e-3f);
    fill<<<256, 256, 0, stream>>>(count, b, 2e-3f);
    step("fill", cudaGetLastError());
  }
  const dim3 grid(n / kTile, n / kTile);
  for (std::uint64_t launch = 0; error.empty() && !stop.load(std::memory_order_relaxed); ++launch) {
    cudaEvent_t &slot = done[launch % done.size()];
    // The slot's previous GEMM must be done: at most in_flight are queued.
    if (launch >= done.size() && !step("cudaEventSynchronize", cudaEventSynchronize(slot))) break;
    if (launch == done.size()) progress.running.store(true, std::memory_order_release);
    sgemm<<<grid, kThreads, 0, stream>>>(n, a, b, c);
    if (!step("sgemm launch", cudaGetLastError())) break;
    if (!step("cudaEventRecord", cudaEventRecord(slot, stream))) break;
    progress.launches.fetch_add(1, std::memory_order_relaxed);
  }
  if (stream != nullptr) step("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  for (auto event : done) {
    if (event != nullptr) cudaEventDestroy(event);
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  if (stream != nullptr) cudaStreamDestroy(stream);
  progress.error = error;
  progress.finished.store(true, std::memory_order_release);
}

}  // namespace kiln_bench::storm
