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
#include "kiln_cuda_runtime_device.hpp"
#include "trajopt_kernels.cuh"
#include "trajopt_solver.hpp"

#ifndef KILN_TRAJOPT_PLUGIN_ID
#define KILN_TRAJOPT_PLUGIN_ID "org.kiln.trajopt"
#endif
#define KILN_TRAJOPT_PLUGIN_VERSION "1.0.0"

namespace {

using namespace kiln_trajopt;

// The seed kernel's instantiations: the blocks per SM its registers must allow, and its threads per
// block, `threads` when the launch fills the GPU and `few_threads` when it has at most a block per SM
// (a batch-1 solve: the step's team-strided phases then take half the rounds, on an SM that would
// otherwise hold one block of 128). seed_kernel<256, 1> has the register cap of <128, 2> (255), so
// one instantiation runs both ways. kDefaultVariant is the measured choice (plugins/trajopt/README.md
// "Measured"); KILN_TRAJOPT_KERNEL=<index> picks another at activate, for measurements.
struct SeedVariant {
  void (*kernel)(KernelParams);
  unsigned threads;
  unsigned few_threads;
  const char *name;
};
// (-DKILN_TRAJOPT_KERNEL_VARIANTS: all three, for measurements; else the default only, a third of the
// compile time.)
const SeedVariant kSeedVariants[] = {{seed_kernel<256, 1>, 128, 256, "128 threads (256 at a block per SM), 2 blocks/SM"},
#ifdef KILN_TRAJOPT_KERNEL_VARIANTS
                                     {seed_kernel<128, 4>, 128, 128, "128 threads, 4 blocks/SM"},
                                     {seed_kernel<64, 5>, 64, 64, "64 threads, 5 blocks/SM"}
#endif
};
#ifndef KILN_TRAJOPT_DEFAULT_KERNEL
#define KILN_TRAJOPT_DEFAULT_KERNEL 0
#endif

// The Device policy of trajopt_solver.hpp over the CUDA runtime: the stream, event, blocks and copies
// are kiln_cuda_runtime_device.hpp's; the kernels and their warm-up are this plugin's.
class CudaDevice : public kiln_plugin_common::CudaRuntimeDeviceBase {
 public:
  explicit CudaDevice(const kiln_host_services *) noexcept : CudaRuntimeDeviceBase("wait: the trajectory solve") {}

  kiln_status open(int32_t ordinal, size_t device_bytes, size_t pinned_bytes, unsigned char **device_block,
                   unsigned char **pinned_block, kiln::plugin::Message &message) noexcept {
    ordinal_ = ordinal;
    int variant = KILN_TRAJOPT_DEFAULT_KERNEL;
    if (const char *chosen = std::getenv("KILN_TRAJOPT_KERNEL")) {  // setup thread: a measurement knob
      const int k = std::atoi(chosen);
      if (k >= 0 && k < static_cast<int>(sizeof kSeedVariants / sizeof kSeedVariants[0])) variant = k;
    }
    seed_ = kSeedVariants[variant];
    if (!enter(message) ||
        !check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, ordinal),
               "activate: reading the device's SM count", message) ||
        !check(cudaFuncGetAttributes(&seed_attributes_, seed_.kernel), "activate: loading the seed kernel", message) ||
        !check(cudaFuncGetAttributes(&finalize_attributes_, finalize_kernel), "activate: loading the finalize kernel", message) ||
        !check(cudaFuncSetAttribute(seed_.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kSeedSharedBytes)),
               "activate: reserving the seed kernel's shared memory (the band of N * dof rows)", message) ||
        !create_stream_and_event(message) || !reserve(device_bytes, pinned_bytes, message))
      return status_;
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

  kiln_status launch_seeds(const KernelParams &p, unsigned blocks, void *stream, const char *what,
                           kiln::plugin::Message &message) noexcept {
    const unsigned threads = blocks <= static_cast<unsigned>(sm_count_) ? seed_.few_threads : seed_.threads;
    seed_.kernel<<<blocks, threads, kSeedSharedBytes, static_cast<cudaStream_t>(stream)>>>(p);
    return check(cudaGetLastError(), what, message) ? KILN_OK : status_;
  }
  kiln_status launch_finalize(const KernelParams &p, unsigned blocks, void *stream, const char *what,
                              kiln::plugin::Message &message) noexcept {
    finalize_kernel<<<blocks, kFinalizeBlock, 0, static_cast<cudaStream_t>(stream)>>>(p);
    return check(cudaGetLastError(), what, message) ? KILN_OK : status_;
  }
  void describe(char *text, size_t size) const noexcept {
    std::snprintf(text, size, "seed kernel (%s) %d registers, %zu bytes local memory, %zu bytes shared memory per block",
                  seed_.name, seed_attributes_.numRegs, seed_attributes_.localSizeBytes, kSeedSharedBytes);
  }

 private:
  SeedVariant seed_ = kSeedVariants[0];
  int sm_count_ = 0;
  cudaFuncAttributes seed_attributes_{}, finalize_attributes_{};
};

using TrajoptPlugin = TrajoptSolver<CudaDevice>;

}  // namespace

KILN_PLUGIN(TrajoptPlugin, KILN_TRAJOPT_PLUGIN_ID, KILN_TRAJOPT_PLUGIN_VERSION, KILN_TRAJOPT_INTERFACE_ID,
            KILN_SELFTEST_INTERFACE_ID, KILN_ROBOTMODEL_INTERFACE_ID)
