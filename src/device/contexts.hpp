// kiln internal: CUDA contexts a host call runs in — a partition's green context made current
// around a plugin's setup calls, the context left current afterwards, the device's stream
// priority range.
#pragma once

#include <functional>

#include <kiln/placement.hpp>

namespace kiln::device {

// The context current on the calling thread (a CUcontext), nullptr when none or no driver.
void *current_context() noexcept;

// [setup-thread] Throws UsageError when `priority` lies outside `device`'s stream priority range
// (cuCtxGetStreamPriorityRange in its primary context), naming the range.
void check_stream_priority(int device, int priority);

}  // namespace kiln::device
