// kiln IK plugin, nvcc form: interface "kiln.ik/1" (abi/kiln/ext/ik.h) for one serial chain, with
// the kernel linked in and the CUDA runtime (static cudart).
//
// The chain comes from the generated header kiln_fk_chain.cuh (kiln-urdf-fk, one per robot, found
// through the include path), so this one source builds the solver of any robot:
//   kiln_add_plugin(kiln_ik_<robot> SOURCES ik_plugin.cu) + the robot's generated directory
//   on the include path + KILN_IK_PLUGIN_ID="org.kiln.ik.<robot>".
//
// Everything but the GPU calls is ik_solver.hpp, shared with the split form (ik_split_plugin.cpp);
// the batch solve itself is ik_batch.cuh (kernel) and ik_batch_host.hpp (activate(-1)). Every
// buffer is reserved at activate for max_batch targets; a solve copies, launches one kernel and
// records one event.
//
// Build-time variants (plugins/ik/README.md, "Variants"): KILN_IK_INITIAL_DAMPING (the damping
// when options->damping is 0), KILN_IK_MAX_ITERATIONS_CAP (a cap on max_iterations),
// KILN_IK_VARIANT (appended to the plugin version) and KILN_IK_FAULT_WRONG_ANSWERS (a deliberately
// broken build whose self-test fails, for tests and demos of a refused swap).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "ik_batch.cuh"
#include "ik_solver.hpp"
#include "kiln/plugin.hpp"

#ifndef KILN_IK_PLUGIN_ID
#define KILN_IK_PLUGIN_ID "org.kiln.ik"
#endif
#define KILN_IK_PLUGIN_BASE_VERSION "1.1.0"
#ifdef KILN_IK_VARIANT
#define KILN_IK_PLUGIN_VERSION KILN_IK_PLUGIN_BASE_VERSION "+" KILN_IK_VARIANT
#else
#define KILN_IK_PLUGIN_VERSION KILN_IK_PLUGIN_BASE_VERSION
#endif

namespace {

// The Device policy of ik_solver.hpp over the CUDA runtime.
class CudaRuntimeDevice {
 public:
  explicit CudaRuntimeDevice(const kiln_host_services *) noexcept {}

  kiln_status open(int32_t ordinal, size_t bytes, unsigned char **device_block, unsigned char **pinned_block,
                   kiln::plugin::Message &message) noexcept {
    ordinal_ = ordinal;
    if (!check(cudaSetDevice(ordinal_), "activate: cudaSetDevice", message) ||
        !check(cudaFuncGetAttributes(&attributes_, solve_kernel), "activate: loading the IK kernel", message) ||
        !check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "activate: cudaStreamCreate", message) ||
        !check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "activate: cudaEventCreate", message))
      return status_;
    void *device = nullptr;
    if (!check(cudaMalloc(&device, bytes), "activate: cudaMalloc of the solver's buffers", message)) return status_;
    device_block_ = static_cast<unsigned char *>(device);
    void *pinned = nullptr;
    if (!check(cudaMallocHost(&pinned, bytes), "activate: cudaMallocHost of the staging buffers", message))
      return status_;
    pinned_block_ = static_cast<unsigned char *>(pinned);
    if (!check(cudaMemsetAsync(device_block_, 0, bytes, stream_), "activate: clearing the solver's buffers", message))
      return status_;
    *device_block = device_block_;
    *pinned_block = pinned_block_;
    return KILN_OK;
  }

  kiln_status select(const char *what, kiln::plugin::Message &message) noexcept {
    return check(cudaSetDevice(ordinal_), what, message) ? KILN_OK : status_;
  }
  kiln_status to_device(void *dst, const void *src, size_t bytes, void *stream, const char *what,
                        kiln::plugin::Message &message) noexcept {
    return copy(dst, src, bytes, cudaMemcpyHostToDevice, stream, what, message);
  }
  kiln_status to_host(void *dst, const void *src, size_t bytes, void *stream, const char *what,
                      kiln::plugin::Message &message) noexcept {
    return copy(dst, src, bytes, cudaMemcpyDeviceToHost, stream, what, message);
  }
  kiln_status launch(const KernelParams &params, unsigned blocks, void *stream, const char *what,
                     kiln::plugin::Message &message) noexcept {
    solve_kernel<<<blocks, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(params);
    return check(cudaGetLastError(), what, message) ? KILN_OK : status_;
  }
  kiln_status synchronize(void *stream, const char *what, kiln::plugin::Message &message) noexcept {
    return check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), what, message) ? KILN_OK : status_;
  }
  kiln_status record(void *stream, kiln::plugin::Message &message) noexcept {
    return check(cudaEventRecord(done_, static_cast<cudaStream_t>(stream)), "solve: cudaEventRecord", message)
               ? KILN_OK
               : status_;
  }
  kiln_status wait_event(kiln::plugin::Message &message) noexcept {
    return check(cudaEventSynchronize(done_), "wait: the IK solve", message) ? KILN_OK : status_;
  }
  bool finished() noexcept { return cudaEventQuery(done_) != cudaErrorNotReady; }
  void *stream() const noexcept { return stream_; }
  void describe(char *text, size_t size) const noexcept {
    std::snprintf(text, size, "kernel %d registers, %zu bytes local memory per thread", attributes_.numRegs,
                  attributes_.localSizeBytes);
  }

  void close() noexcept {
    if (stream_ != nullptr || done_ != nullptr || device_block_ != nullptr || pinned_block_ != nullptr) {
      cudaSetDevice(ordinal_);
      if (stream_ != nullptr) cudaStreamSynchronize(stream_);
      if (done_ != nullptr) cudaEventDestroy(done_);
      if (stream_ != nullptr) cudaStreamDestroy(stream_);
      if (device_block_ != nullptr) cudaFree(device_block_);
      if (pinned_block_ != nullptr) cudaFreeHost(pinned_block_);
    }
    stream_ = nullptr;
    done_ = nullptr;
    device_block_ = nullptr;
    pinned_block_ = nullptr;
  }

 private:
  kiln_status copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, void *stream, const char *what,
                   kiln::plugin::Message &message) noexcept {
    return check(cudaMemcpyAsync(dst, src, bytes, kind, static_cast<cudaStream_t>(stream)), what, message) ? KILN_OK
                                                                                                           : status_;
  }
  bool check(cudaError_t error, const char *what, kiln::plugin::Message &message) noexcept {
    if (error == cudaSuccess) return true;
    status_ = error == cudaErrorMemoryAllocation ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DEVICE;
    message.format("%s failed on device %d: %s (%d): %s", what, static_cast<int>(ordinal_), cudaGetErrorName(error),
                   static_cast<int>(error), cudaGetErrorString(error));
    return false;
  }

  int32_t ordinal_ = -1;
  cudaFuncAttributes attributes_{};
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  unsigned char *device_block_ = nullptr;
  unsigned char *pinned_block_ = nullptr;
  kiln_status status_ = KILN_OK;  // of the last failed call
};

using IkPlugin = IkSolver<CudaRuntimeDevice>;

}  // namespace

KILN_PLUGIN(IkPlugin, KILN_IK_PLUGIN_ID, KILN_IK_PLUGIN_VERSION, KILN_IK_INTERFACE_ID, KILN_SELFTEST_INTERFACE_ID)
