// kiln TrajOpt plugin, nvcc form: interface "kiln.trajopt/1" (abi/kiln/ext/trajopt.h) for one serial
// chain and one horizon, with the kernels linked in and the CUDA runtime static.
//
// The chain comes from the generated headers kiln_fk_chain.cuh and kiln_rnea_chain.cuh (kiln-urdf-fk,
// found in KILN_GEN_DIR), the horizon from KILN_TRAJOPT_N, the id from KILN_TRAJOPT_PLUGIN_ID:
// module/CMakeLists.txt. Everything but the CUDA calls is ../solver (trajopt_solver.hpp).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kiln/plugin.hpp"
#include "trajopt_kernels.cuh"
#include "trajopt_solver.hpp"

#ifndef KILN_TRAJOPT_PLUGIN_ID
#define KILN_TRAJOPT_PLUGIN_ID "org.kiln.trajopt"
#endif
#define KILN_TRAJOPT_PLUGIN_VERSION "1.0.0"

namespace {

using namespace kiln_trajopt;

// The seed kernel's instantiations: threads per block and the blocks per SM its registers must
// allow. kDefaultVariant is the measured choice (README "Measured"); KILN_TRAJOPT_KERNEL=<index> picks
// another at activate, for measurements.
struct SeedVariant {
  void (*kernel)(KernelParams);
  unsigned threads;
  const char *name;
};
// (-DKILN_TRAJOPT_KERNEL_VARIANTS: all three, for measurements; else the default only, a third of the
// compile time.)
const SeedVariant kSeedVariants[] = {{seed_kernel<128, 2>, 128, "128 threads, 2 blocks/SM"},
#ifdef KILN_TRAJOPT_KERNEL_VARIANTS
                                     {seed_kernel<128, 4>, 128, "128 threads, 4 blocks/SM"},
                                     {seed_kernel<64, 5>, 64, "64 threads, 5 blocks/SM"}
#endif
};
#ifndef KILN_TRAJOPT_DEFAULT_KERNEL
#define KILN_TRAJOPT_DEFAULT_KERNEL 0
#endif

// The Device policy of trajopt_solver.hpp over the CUDA runtime.
class CudaDevice {
 public:
  explicit CudaDevice(const kiln_host_services *) noexcept {}

  kiln_status open(int32_t ordinal, size_t device_bytes, size_t pinned_bytes, unsigned char **device_block,
                   unsigned char **pinned_block, kiln::plugin::Message &message) noexcept {
    ordinal_ = ordinal;
    int variant = KILN_TRAJOPT_DEFAULT_KERNEL;
    if (const char *chosen = std::getenv("KILN_TRAJOPT_KERNEL")) {  // setup thread: a measurement knob
      const int k = std::atoi(chosen);
      if (k >= 0 && k < static_cast<int>(sizeof kSeedVariants / sizeof kSeedVariants[0])) variant = k;
    }
    seed_ = kSeedVariants[variant];
    if (!check(cudaSetDevice(ordinal_), "activate: cudaSetDevice", message) ||
        !check(cudaFuncGetAttributes(&seed_attributes_, seed_.kernel), "activate: loading the seed kernel", message) ||
        !check(cudaFuncGetAttributes(&finalize_attributes_, finalize_kernel), "activate: loading the finalize kernel", message) ||
        !check(cudaFuncSetAttribute(seed_.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kSeedSharedBytes)),
               "activate: reserving the seed kernel's shared memory (the band of N * dof rows)", message) ||
        !check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "activate: cudaStreamCreate", message) ||
        !check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "activate: cudaEventCreate", message))
      return status_;
    void *device = nullptr, *pinned = nullptr;
    if (!check(cudaMalloc(&device, device_bytes), "activate: cudaMalloc of the solver's buffers", message)) return status_;
    device_block_ = static_cast<unsigned char *>(device);
    if (!check(cudaMallocHost(&pinned, pinned_bytes), "activate: cudaMallocHost of the staging buffers", message))
      return status_;
    pinned_block_ = static_cast<unsigned char *>(pinned);
    std::memset(pinned_block_, 0, pinned_bytes);
    if (!check(cudaMemsetAsync(device_block_, 0, device_bytes, stream_), "activate: clearing the solver's buffers", message) ||
        !check(cudaStreamSynchronize(stream_), "activate: clearing the solver's buffers", message))
      return status_;
    // Warm up: both kernels once with nothing to do, so first-launch work happens here.
    KernelParams warm{};
    warm.seeds = 1, warm.seed_span = 1;
    seed_.kernel<<<1, seed_.threads, kSeedSharedBytes, stream_>>>(warm);
    finalize_kernel<<<1, kFinalizeBlock, 0, stream_>>>(warm);
    if (!check(cudaGetLastError(), "activate: launching the kernels", message) ||
        !check(cudaStreamSynchronize(stream_), "activate: running the kernels", message))
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
  kiln_status launch_seeds(const KernelParams &p, unsigned blocks, void *stream, const char *what,
                           kiln::plugin::Message &message) noexcept {
    seed_.kernel<<<blocks, seed_.threads, kSeedSharedBytes, static_cast<cudaStream_t>(stream)>>>(p);
    return check(cudaGetLastError(), what, message) ? KILN_OK : status_;
  }
  kiln_status launch_finalize(const KernelParams &p, unsigned blocks, void *stream, const char *what,
                              kiln::plugin::Message &message) noexcept {
    finalize_kernel<<<blocks, kFinalizeBlock, 0, static_cast<cudaStream_t>(stream)>>>(p);
    return check(cudaGetLastError(), what, message) ? KILN_OK : status_;
  }
  kiln_status synchronize(void *stream, const char *what, kiln::plugin::Message &message) noexcept {
    return check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), what, message) ? KILN_OK : status_;
  }
  kiln_status record(void *stream, kiln::plugin::Message &message) noexcept {
    return check(cudaEventRecord(done_, static_cast<cudaStream_t>(stream)), "solve: cudaEventRecord", message) ? KILN_OK
                                                                                                             : status_;
  }
  kiln_status wait_event(kiln::plugin::Message &message) noexcept {
    return check(cudaEventSynchronize(done_), "wait: the trajectory solve", message) ? KILN_OK : status_;
  }
  bool finished() noexcept { return cudaEventQuery(done_) != cudaErrorNotReady; }
  void *stream() const noexcept { return stream_; }
  void describe(char *text, size_t size) const noexcept {
    std::snprintf(text, size, "seed kernel (%s) %d registers, %zu bytes local memory, %zu bytes shared memory per block",
                  seed_.name, seed_attributes_.numRegs, seed_attributes_.localSizeBytes, kSeedSharedBytes);
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
    stream_ = nullptr, done_ = nullptr, device_block_ = nullptr, pinned_block_ = nullptr;
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
  SeedVariant seed_ = kSeedVariants[0];
  cudaFuncAttributes seed_attributes_{}, finalize_attributes_{};
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  unsigned char *device_block_ = nullptr;
  unsigned char *pinned_block_ = nullptr;
  kiln_status status_ = KILN_OK;
};

using TrajoptPlugin = TrajoptSolver<CudaDevice>;

}  // namespace

KILN_PLUGIN(TrajoptPlugin, KILN_TRAJOPT_PLUGIN_ID, KILN_TRAJOPT_PLUGIN_VERSION, KILN_TRAJOPT_INTERFACE_ID,
            KILN_SELFTEST_INTERFACE_ID)
