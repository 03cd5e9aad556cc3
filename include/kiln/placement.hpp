// kiln: where a plugin's GPU work runs. A GpuPartition reserves a share of one device's SMs in a
// CUDA green context; an instance activated in it (ActivateOptions, SwapOptions) creates its
// streams there, so its kernels run on those SMs only, launched from any thread. Stream priority
// is the lighter alternative (or addition): the plugin's streams are scheduled before the
// default-priority work of the same process.
//
// A partition keeps the process's own work apart: run the rest of the process's GPU work (a
// perception network, a planner) inside split().rest, and it never takes the reserved SMs.
// Another process's work is not confined by it: without MPS, processes share the GPU by time
// slices (docs/hot-swap.md, "GPU isolation").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace kiln {

class GpuPartition;

// How many SMs to reserve: a count, or a fraction of the device's SMs (count 0). The driver
// rounds up to its granularity (compute capability 9.x: at least 8, a multiple of 8; 8.x: at
// least 4, even); GpuPartition::sm_count() says what was reserved.
struct SmShare {
  unsigned count = 0;
  double fraction = 0;  // in (0, 1), when count is 0
};

// A reserved share and the SMs it left.
struct GpuSplit {
  std::shared_ptr<const GpuPartition> reserved;
  std::shared_ptr<const GpuPartition> rest;  // empty when the share took every SM
};

class GpuPartition {
 public:
  // [setup-thread] Split `device`'s SMs into a reserved share and the rest, each a green context.
  // Throws UsageError for a share of 0 SMs, a fraction outside (0, 1) or more SMs than the device
  // has (naming the device's count and granularity); IncompatibleError where the driver has no
  // green contexts (before CUDA 12.4, or the device refuses them), naming the driver and the way
  // out (a newer driver, or stream priority alone); kiln::Error (other) when there is no driver
  // or no such device.
  static GpuSplit split(int device, SmShare share);

  GpuPartition(const GpuPartition &) = delete;
  GpuPartition &operator=(const GpuPartition &) = delete;
  // Destroys the green context. Instances activated in it hold it (shared_ptr) until they are gone.
  ~GpuPartition();

  int device() const noexcept { return device_; }
  unsigned sm_count() const noexcept { return sm_count_; }
  unsigned device_sm_count() const noexcept { return device_sm_count_; }
  // "16 of 132 SMs of device 0 (NVIDIA H100 80GB HBM3)"
  std::string describe() const;

  // The green context as a CUcontext (cuCtxFromGreenCtx), for code of the process that talks to
  // the driver itself. A green context may be current on one thread at a time: prefer run_inside.
  void *cuda_context() const noexcept { return context_; }

  // [setup-thread] Run fn with this partition's context current on the calling thread, then put
  // back the thread's previous context (also when fn throws). Streams, memory and modules fn
  // creates belong to the partition: kernels launched on those streams run on its SMs from any
  // thread. Calls from several threads take turns (the driver allows a green context to be
  // current on one thread at a time).
  void run_inside(const std::function<void()> &fn) const;

  struct Context;  // the driver handles; defined by kiln's device layer, opaque here

 private:
  friend struct Context;
  GpuPartition(std::unique_ptr<Context> handles, int device, unsigned sm_count, unsigned device_sm_count,
               std::string device_name);
  std::unique_ptr<Context> handles_;
  void *context_ = nullptr;
  int device_ = 0;
  unsigned sm_count_ = 0;
  unsigned device_sm_count_ = 0;
  std::string device_name_;
};

// How Instance::activate places a plugin instance.
struct ActivateOptions {
  int device = 0;               // CUDA device ordinal; -1: host only (no device work, no placement)
  std::uint32_t max_batch = 1;  // the largest batch any later call will pass
  // Run the instance's device work on this partition's SMs (its device must be `device`). The
  // plugin must speak ABI 1.1 (abi/README.md); a 1.0 plugin is refused before its activate runs.
  std::shared_ptr<const GpuPartition> partition;
  // Priority of the plugin's streams, CUDA's scale: 0 the default, lower numbers run first (the
  // device's range, e.g. 0 to -5 on an H100; UsageError outside it). Needs an ABI 1.1 plugin.
  int stream_priority = 0;
};

}  // namespace kiln
