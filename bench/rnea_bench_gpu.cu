#include "rnea_bench_gpu.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "kiln_rnea_chain.cuh"  // <build>/bench/iiwa14/
#include "bench_stats.hpp"
#include "gpu_queued_timer.cuh"
#include "rnea_bench_kernel.cuh"

namespace kiln_bench_rnea {

namespace {

__global__ void empty_kernel() {}

using Chain = kiln_rnea::Chain;
constexpr int kDof = Chain::kDof;

void check(cudaError_t result, const char *what) {
  if (result != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(result));
}

// Owns what one run_gpu call allocates, freed on every path out.
struct Resources {
  std::vector<const void *> registered;
  std::vector<void *> device;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Resources() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
    for (void *p : device) cudaFree(p);
    for (const void *p : registered) cudaHostUnregister(const_cast<void *>(p));
  }
  template <class T>
  T *alloc(size_t count) {
    void *p = nullptr;
    check(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
    device.push_back(p);
    return static_cast<T *>(p);
  }
  // false: left pageable (the transfers are then slower, and the output says so).
  bool pin(const void *p, size_t bytes) {
    if (cudaHostRegister(const_cast<void *>(p), bytes, cudaHostRegisterDefault) != cudaSuccess) {
      cudaGetLastError();  // clear it
      return false;
    }
    registered.push_back(p);
    return true;
  }
};

using kiln_bench::median;

template <class T>
std::vector<GpuTiming> run(const States<T> &states, const std::vector<size_t> &sizes, int runs, std::vector<T> &tau) {
  std::vector<GpuTiming> timings;
  const size_t stride = states.stride, elements = stride * kDof;
  try {
    Resources r;
    tau.assign(elements, T(0));
    bool pinned = true;
    for (const T *host : {states.q.data(), states.qd.data(), states.qdd.data(), static_cast<const T *>(tau.data())}) {
      pinned = r.pin(host, elements * sizeof(T)) && pinned;
    }
    T *q = r.alloc<T>(elements), *qd = r.alloc<T>(elements), *qdd = r.alloc<T>(elements), *out = r.alloc<T>(elements);
    check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&r.start), "cudaEventCreate");
    check(cudaEventCreate(&r.stop), "cudaEventCreate");
    int min_grid = 0, block = 0;
    check(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, rnea_batch<Chain, T>),
          "cudaOccupancyMaxPotentialBlockSize");
    cudaFuncAttributes attributes{};
    check(cudaFuncGetAttributes(&attributes, rnea_batch<Chain, T>), "cudaFuncGetAttributes");
    int device = 0, sm_count = 1;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    // A batch too small to fill the GPU at the occupancy's block size is spread over every SM in
    // smaller blocks (whole warps): a thread's RNEA is a dependent chain, so the kernel takes as long
    // as the slowest warp, which is faster with fewer warps beside it on its SM's schedulers.
    const auto block_for = [&](size_t n) {
      const size_t per_sm = (n + static_cast<size_t>(sm_count) - 1) / static_cast<size_t>(sm_count);
      return static_cast<int>(std::min<size_t>(static_cast<size_t>(block), std::max<size_t>(32, (per_sm + 31) / 32 * 32)));
    };

    // The first n of each joint's row: 7 rows of n values, `stride` apart.
    const auto copy_rows = [&](T *to, const T *from, size_t n, cudaMemcpyKind kind) {
      check(cudaMemcpy2DAsync(to, stride * sizeof(T), from, stride * sizeof(T), n * sizeof(T), kDof, kind, r.stream),
            "cudaMemcpy2DAsync");
    };
    const auto launch = [&](size_t n) {
      const int threads = block_for(n);
      const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
      rnea_batch<Chain, T><<<blocks, threads, 0, r.stream>>>(q, qd, qdd, out, n, stride);
      check(cudaGetLastError(), "rnea_batch launch");
    };
    const auto elapsed_ms = [&] {
      check(cudaEventSynchronize(r.stop), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, r.start, r.stop), "cudaEventElapsedTime");
      return static_cast<double>(ms);
    };
    kiln_bench_gpu::QueuedTimer queued;
    check(queued.init(r.stream), "the queued timer's setup");
    const auto gpu_ms = [&](const auto &work) {
      float ms = 0;
      check(queued.time(work, &ms), "a queued timing");
      return static_cast<double>(ms);
    };
    const auto empty_launch = [&] { empty_kernel<<<1, 32, 0, r.stream>>>(); };
    const size_t largest = *std::max_element(sizes.begin(), sizes.end());
    copy_rows(q, states.q.data(), largest, cudaMemcpyHostToDevice);
    copy_rows(qd, states.qd.data(), largest, cudaMemcpyHostToDevice);
    copy_rows(qdd, states.qdd.data(), largest, cudaMemcpyHostToDevice);
    check(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize");

    // The floor of a timed launch (launch latency and the events' own), in the same run.
    std::vector<double> empty, empty_gpu;
    for (int run = 0; run < runs + 3; ++run) {
      check(cudaEventRecord(r.start, r.stream), "cudaEventRecord");
      empty_launch();
      check(cudaGetLastError(), "empty kernel launch");
      check(cudaEventRecord(r.stop, r.stream), "cudaEventRecord");
      const double ms = elapsed_ms();
      const double gpu = gpu_ms(empty_launch);
      if (run >= 3) empty.push_back(ms), empty_gpu.push_back(gpu);  // after 3 untimed, as the batches
    }
    const double empty_ms = median(empty), empty_gpu_ms = median(empty_gpu);
    const bool empty_timed_out = queued.take_timed_out();  // the floor every row is read against

    for (const size_t n : sizes) {
      GpuTiming t;
      t.empty_kernel_ms = empty_ms, t.empty_gpu_ms = empty_gpu_ms;
      t.count = n, t.block = block_for(n), t.registers = attributes.numRegs, t.pinned = pinned;
      for (int w = 0; w < 3; ++w) launch(n);
      std::vector<double> kernel, gpu, round_trip;
      for (int run = 0; run < runs; ++run) {
        check(cudaEventRecord(r.start, r.stream), "cudaEventRecord");
        launch(n);
        check(cudaEventRecord(r.stop, r.stream), "cudaEventRecord");
        kernel.push_back(elapsed_ms());
        gpu.push_back(gpu_ms([&] { launch(n); }));
      }
      for (int run = 0; run < 3; ++run) {
        check(cudaEventRecord(r.start, r.stream), "cudaEventRecord");
        copy_rows(q, states.q.data(), n, cudaMemcpyHostToDevice);
        copy_rows(qd, states.qd.data(), n, cudaMemcpyHostToDevice);
        copy_rows(qdd, states.qdd.data(), n, cudaMemcpyHostToDevice);
        launch(n);
        copy_rows(tau.data(), out, n, cudaMemcpyDeviceToHost);
        check(cudaEventRecord(r.stop, r.stream), "cudaEventRecord");
        round_trip.push_back(elapsed_ms());
      }
      t.kernel_ms = median(kernel);
      t.kernel_min_ms = *std::min_element(kernel.begin(), kernel.end());
      t.gpu_ms = median(gpu);
      t.gpu_min_ms = *std::min_element(gpu.begin(), gpu.end());
      t.hold_timed_out = queued.take_timed_out() || empty_timed_out;
      t.transfer_ms = median(round_trip);
      t.ok = true;
      timings.push_back(t);
    }
    // The torques of the largest batch, for the accuracy check.
    launch(largest);
    copy_rows(tau.data(), out, largest, cudaMemcpyDeviceToHost);
    check(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize");
  } catch (const std::exception &error) {
    GpuTiming failed;
    failed.error = error.what();
    timings.push_back(failed);
  }
  return timings;
}

}  // namespace

GpuInfo probe_gpu() {
  GpuInfo info;
  int count = 0;
  const cudaError_t result = cudaGetDeviceCount(&count);
  if (result != cudaSuccess || count == 0) {
    info.detail = result != cudaSuccess ? cudaGetErrorString(result) : "no devices";
    cudaGetLastError();  // clear it
    return info;
  }
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, 0) != cudaSuccess) {
    info.detail = "cudaGetDeviceProperties failed";
    return info;
  }
  info.ok = true;
  info.name = properties.name;
  info.sm_count = properties.multiProcessorCount;
  info.major = properties.major, info.minor = properties.minor;
  info.memory_gib = static_cast<double>(properties.totalGlobalMem) / (1ull << 30);
  return info;
}

std::vector<GpuTiming> run_gpu(const States<float> &states, const std::vector<size_t> &sizes, int runs,
                               std::vector<float> &tau) {
  return run(states, sizes, runs, tau);
}
std::vector<GpuTiming> run_gpu(const States<double> &states, const std::vector<size_t> &sizes, int runs,
                               std::vector<double> &tau) {
  return run(states, sizes, runs, tau);
}

}  // namespace kiln_bench_rnea
