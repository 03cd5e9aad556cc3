// kiln plugins: the CUDA runtime half of a solver's Device policy (ik_solver.hpp, trajopt_solver.hpp)
// that kiln.ik's nvcc form and kiln.trajopt share: one stream, one event, a device block and a pinned
// block, the async copies, the event, and errors turned into statuses with the message
// "<what> failed on device <d>: <error name> (<code>): <text>". Each plugin's Device derives from it
// and adds what is its own: open (which kernels to load and check, the warm-up), launch, describe.
// CUDA runtime code: .cu files only (the split form's host part has its own, over the driver).
#pragma once

#include <cuda_runtime.h>

#include <stddef.h>
#include <stdint.h>

#include "kiln/plugin.hpp"

namespace kiln_plugin_common {

class CudaRuntimeDeviceBase {
 public:
  // wait_what names the solve in wait()'s failure message ("wait: the IK solve").
  explicit CudaRuntimeDeviceBase(const char *wait_what) noexcept : wait_what_(wait_what) {}

  // [setup-thread] Where activate runs (abi/kiln/plugin.h, kiln_activate_params): the context the host
  // made current (KILN_ACTIVATE_IN_CURRENT_CONTEXT: a green context, which cudaSetDevice would leave)
  // and the priority of the streams to create. Called before open.
  kiln_status place(const kiln_activate_params &params, kiln::plugin::Message &) noexcept {
    ordinal_ = params.device_ordinal;
    in_context_ = (params.flags & KILN_ACTIVATE_IN_CURRENT_CONTEXT) != 0;
    priority_ = params.stream_priority;
    return KILN_OK;
  }
  // [setup-thread] open's first step: the device's primary context, or the host's context left as it is
  // (checked to be on the device asked for).
  bool enter(kiln::plugin::Message &message) noexcept {
    if (!in_context_) return check(cudaSetDevice(ordinal_), "activate: cudaSetDevice", message);
    int current = -1;
    if (!check(cudaGetDevice(&current), "activate: cudaGetDevice in the host's context", message)) return false;
    if (current == ordinal_) return true;
    message.format("activate: the host's context is on device %d, not on device_ordinal %d", current,
                   static_cast<int>(ordinal_));
    status_ = KILN_ERR_INVALID_ARGUMENT;
    return false;
  }
  // [control-thread] Streams created in a green context run there whatever the calling thread's
  // context is, so the primary context is fine here.
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
  kiln_status synchronize(void *stream, const char *what, kiln::plugin::Message &message) noexcept {
    return check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), what, message) ? KILN_OK : status_;
  }
  kiln_status record(void *stream, kiln::plugin::Message &message) noexcept {
    return check(cudaEventRecord(done_, static_cast<cudaStream_t>(stream)), "solve: cudaEventRecord", message)
               ? KILN_OK
               : status_;
  }
  kiln_status wait_event(kiln::plugin::Message &message) noexcept {
    return check(cudaEventSynchronize(done_), wait_what_, message) ? KILN_OK : status_;
  }
  // Finished, or failed: either way wait() no longer blocks (and reports a failure).
  bool finished() noexcept { return cudaEventQuery(done_) != cudaErrorNotReady; }
  void *stream() const noexcept { return stream_; }

  // [control-thread] A solve's device work as one CUDA graph (kiln_solver_instance.hpp: replayed
  // while the work repeats, one launch instead of a copy, kernels and copies each). begin_capture:
  // false when the stream cannot capture (nothing begun). end_capture: the graph instantiated
  // (true), or nothing kept (the capture failed, or the work did not enqueue: `enqueued` false);
  // either way no longer capturing and no graph kept from before.
  bool begin_capture(void *stream) noexcept {
    return cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  }
  bool end_capture(void *stream, bool enqueued) noexcept {
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph);
    drop_graph();
    bool kept = false;
    if (ended == cudaSuccess && enqueued && graph != nullptr)
      kept = cudaGraphInstantiate(&graph_, graph, 0) == cudaSuccess;
    if (!kept) graph_ = nullptr;
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // a failed capture leaves no error for the next call to find
    return kept;
  }
  bool has_graph() const noexcept { return graph_ != nullptr; }
  kiln_status launch_graph(void *stream, kiln::plugin::Message &message) noexcept {
    return check(cudaGraphLaunch(graph_, static_cast<cudaStream_t>(stream)), "solve: cudaGraphLaunch", message)
               ? KILN_OK
               : status_;
  }
  void drop_graph() noexcept {
    if (graph_ != nullptr) cudaGraphExecDestroy(graph_);
    graph_ = nullptr;
  }

  // [setup-thread] Waits for the stream, then frees whatever open got to; safe after a failed open.
  void close() noexcept {
    if (stream_ != nullptr || done_ != nullptr || device_block_ != nullptr || pinned_block_ != nullptr || graph_ != nullptr) {
      if (!in_context_) cudaSetDevice(ordinal_);  // else the host made the instance's context current
      if (stream_ != nullptr) cudaStreamSynchronize(stream_);
      drop_graph();
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

 protected:
  // [setup-thread] open's common steps, after the derived open picked ordinal_ and checked its kernels.
  bool create_stream_and_event(kiln::plugin::Message &message) noexcept {
    return check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority_), "activate: cudaStreamCreate",
                 message) &&
           check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "activate: cudaEventCreate", message);
  }
  bool reserve(size_t device_bytes, size_t pinned_bytes, kiln::plugin::Message &message) noexcept {
    void *device = nullptr, *pinned = nullptr;
    if (!check(cudaMalloc(&device, device_bytes), "activate: cudaMalloc of the solver's buffers", message))
      return false;
    device_block_ = static_cast<unsigned char *>(device);
    if (!check(cudaMallocHost(&pinned, pinned_bytes), "activate: cudaMallocHost of the staging buffers", message))
      return false;
    pinned_block_ = static_cast<unsigned char *>(pinned);
    return true;
  }

  bool check(cudaError_t error, const char *what, kiln::plugin::Message &message) noexcept {
    if (error == cudaSuccess) return true;
    status_ = error == cudaErrorMemoryAllocation ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DEVICE;
    message.format("%s failed on device %d: %s (%d): %s", what, static_cast<int>(ordinal_), cudaGetErrorName(error),
                   static_cast<int>(error), cudaGetErrorString(error));
    return false;
  }

  int32_t ordinal_ = -1;
  bool in_context_ = false;  // KILN_ACTIVATE_IN_CURRENT_CONTEXT: never leave the host's context
  int32_t priority_ = 0;     // of the streams open creates
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  cudaGraphExec_t graph_ = nullptr;  // the last solve's captured work, or none
  unsigned char *device_block_ = nullptr;
  unsigned char *pinned_block_ = nullptr;
  kiln_status status_ = KILN_OK;  // of the last failed call

 private:
  // A copy onto itself is none: a solver may keep an array in pinned memory alone (the IK plugin's
  // instance of a few slots), where its host and device copies name the same memory.
  kiln_status copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, void *stream, const char *what,
                   kiln::plugin::Message &message) noexcept {
    if (dst == src) return KILN_OK;
    return check(cudaMemcpyAsync(dst, src, bytes, kind, static_cast<cudaStream_t>(stream)), what, message) ? KILN_OK
                                                                                                           : status_;
  }

  const char *wait_what_;
};

}  // namespace kiln_plugin_common
