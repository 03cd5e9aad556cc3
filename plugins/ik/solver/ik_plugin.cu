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
// records one event (an instance of a few slots copies nothing: ik_solver.hpp).
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
#include "kiln_cuda_runtime_device.hpp"

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

// The Device policy of ik_solver.hpp over the CUDA runtime: the stream, event, blocks and copies are
// kiln_cuda_runtime_device.hpp's; the kernel is this plugin's.
class CudaRuntimeDevice : public kiln_plugin_common::CudaRuntimeDeviceBase {
 public:
  explicit CudaRuntimeDevice(const kiln_host_services *) noexcept : CudaRuntimeDeviceBase("wait: the IK solve") {}

  kiln_status open(int32_t ordinal, size_t bytes, unsigned char **device_block, unsigned char **pinned_block,
                   kiln::plugin::Message &message) noexcept {
    ordinal_ = ordinal;
    if (!enter(message) ||
        !check(cudaFuncGetAttributes(&attributes_, solve_kernel), "activate: loading the IK kernel", message) ||
        !create_stream_and_event(message) || !reserve(bytes, bytes, message))
      return status_;
    if (!check(cudaMemsetAsync(device_block_, 0, bytes, stream_), "activate: clearing the solver's buffers", message))
      return status_;
    *device_block = device_block_;
    *pinned_block = pinned_block_;
    return KILN_OK;
  }

  kiln_status launch(const KernelParams &params, unsigned blocks, void *stream, const char *what,
                     kiln::plugin::Message &message) noexcept {
    solve_kernel<<<blocks, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(params);
    return check(cudaGetLastError(), what, message) ? KILN_OK : status_;
  }
  void describe(char *text, size_t size) const noexcept {
    std::snprintf(text, size, "kernel %d registers, %zu bytes local memory per thread", attributes_.numRegs,
                  attributes_.localSizeBytes);
  }

 private:
  cudaFuncAttributes attributes_{};
};

using IkPlugin = IkSolver<CudaRuntimeDevice>;

}  // namespace

KILN_PLUGIN(IkPlugin, KILN_IK_PLUGIN_ID, KILN_IK_PLUGIN_VERSION, KILN_IK_INTERFACE_ID, KILN_SELFTEST_INTERFACE_ID,
            KILN_ROBOTMODEL_INTERFACE_ID)
