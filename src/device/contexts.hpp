// kiln internal: the CUDA context current on a thread (checked after a plugin's activate in a
// partition) and a device's stream priority range (checked before a placed activate).
#pragma once

namespace kiln::device {

// The context current on the calling thread (a CUcontext), nullptr when none or no driver.
void *current_context() noexcept;

// `device`'s stream priorities, CUDA's scale: least is the default (0), greatest the most urgent.
struct StreamPriorityRange {
  int least = 0;
  int greatest = 0;
};

// [setup-thread] cuCtxGetStreamPriorityRange in `device`'s primary context (retained for the
// call). Throws kiln::Error (other) when there is no driver or the device cannot be asked.
StreamPriorityRange stream_priority_range(int device);

// [setup-thread] Throws UsageError when `priority` lies outside `device`'s stream priority range,
// naming the range.
void check_stream_priority(int device, int priority);

}  // namespace kiln::device
