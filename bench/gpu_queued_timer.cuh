// Times GPU work without the host's launch latency, as NVBench's blocking kernel does: a kernel
// holds the stream while the start event, the work and the stop event are queued behind it, so
// the start event is taken when the GPU reaches it rather than while the host is still submitting
// the launch. Timed the plain way (record, launch, record), a few-microsecond kernel measures
// mostly that submission, which is the same for every kernel and belongs to none of them.
//
// Header-only, CUDA runtime API, no exceptions: shared by kiln_bench_rnea and the GRiD harness
// of bench/peers (build_all.sh copies it there), so that both sides are timed alike.
#pragma once

#include <cuda_runtime.h>

#include <atomic>

namespace kiln_bench_gpu {
namespace {

// Spins until the host sets *release, or until timeout_ns of the GPU's global timer have passed
// (then sets *timed_out: the host took that long to queue the work, and the time it measured may
// include part of a launch).
__global__ void hold_stream(const volatile int *release, volatile int *timed_out, unsigned long long timeout_ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*release == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

class QueuedTimer {
 public:
  QueuedTimer() = default;
  QueuedTimer(const QueuedTimer &) = delete;
  QueuedTimer &operator=(const QueuedTimer &) = delete;
  ~QueuedTimer() {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (flags_) cudaFreeHost(const_cast<int *>(flags_));
  }

  // Allocates the mapped host flags and the two events; stream 0 is the legacy default stream.
  cudaError_t init(cudaStream_t stream) {
    stream_ = stream;
    void *flags = nullptr;
    cudaError_t result = cudaHostAlloc(&flags, 2 * sizeof(int), cudaHostAllocMapped);
    if (result != cudaSuccess) return result;
    flags_ = static_cast<volatile int *>(flags);
    flags_[0] = flags_[1] = 0;
    void *device = nullptr;
    if ((result = cudaHostGetDevicePointer(&device, flags, 0)) != cudaSuccess) return result;
    device_flags_ = static_cast<int *>(device);
    if ((result = cudaEventCreate(&start_)) != cudaSuccess) return result;
    return cudaEventCreate(&stop_);
  }

  // Queues launch() (which enqueues work on the stream) between the events behind a held stream,
  // releases it and waits: *ms is the GPU's time from the start event to the stop event.
  template <class Launch>
  cudaError_t time(Launch &&launch, float *ms) {
    flags_[0] = 0;
    hold_stream<<<1, 1, 0, stream_>>>(device_flags_, device_flags_ + 1, kTimeoutNs);
    cudaError_t result = cudaGetLastError();
    {
      const Release release{flags_};  // on every way out, a throwing launch() too: no held stream outlives this
      if (result == cudaSuccess) result = cudaEventRecord(start_, stream_);
      if (result == cudaSuccess) {
        launch();
        result = cudaGetLastError();
      }
      if (result == cudaSuccess) result = cudaEventRecord(stop_, stream_);
    }
    if (result != cudaSuccess) return result;
    if ((result = cudaEventSynchronize(stop_)) != cudaSuccess) return result;
    return cudaEventElapsedTime(ms, start_, stop_);
  }

  // Whether a hold ran out before the host released it (see hold_stream) since the last call: one
  // answer per set of timings.
  bool take_timed_out() {
    if (!flags_ || flags_[1] == 0) return false;
    flags_[1] = 0;
    return true;
  }

 private:
  struct Release {
    volatile int *flags;
    ~Release() {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      flags[0] = 1;
    }
  };
  static constexpr unsigned long long kTimeoutNs = 100ull * 1000 * 1000;
  cudaStream_t stream_ = nullptr;
  volatile int *flags_ = nullptr;  // [0] release, [1] a hold timed out
  int *device_flags_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace
}  // namespace kiln_bench_gpu
