// kiln internal: CUDA contexts a host call runs in (see contexts.hpp).
#include "device/contexts.hpp"

#include <cuda.h>

#include <string>

#include <kiln/errors.hpp>

#include "device/driver.hpp"

namespace kiln::device {

void *current_context() noexcept {
  Driver &driver = Driver::instance();
  if (!driver.ok()) return nullptr;
  auto get = driver.proc_as<decltype(&::cuCtxGetCurrent)>("cuCtxGetCurrent");
  CUcontext context = nullptr;
  if (get == nullptr || get(&context) != CUDA_SUCCESS) return nullptr;
  return context;
}

StreamPriorityRange stream_priority_range(int device) {
  Driver &driver = Driver::instance();
  if (!driver.ok()) {
    throw Error(ErrorKind::other, "stream priorities of device " + std::to_string(device) + ": " +
                                      without_declare_hint(driver.detail()));
  }
  auto retain = driver.proc_as<decltype(&::cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  auto release = driver.proc_as<decltype(&::cuDevicePrimaryCtxRelease)>("cuDevicePrimaryCtxRelease");
  auto push = driver.proc_as<decltype(&::cuCtxPushCurrent)>("cuCtxPushCurrent");
  auto pop = driver.proc_as<decltype(&::cuCtxPopCurrent)>("cuCtxPopCurrent");
  auto range = driver.proc_as<decltype(&::cuCtxGetStreamPriorityRange)>("cuCtxGetStreamPriorityRange");
  CUdevice handle = 0;
  CUcontext primary = nullptr;
  if (retain == nullptr || release == nullptr || push == nullptr || pop == nullptr || range == nullptr ||
      device < 0 || device >= driver.device_count() || driver.api().device_get(&handle, device) != CUDA_SUCCESS ||
      retain(&primary, handle) != CUDA_SUCCESS) {
    throw Error(ErrorKind::other, "device " + std::to_string(device) + " cannot be asked for its stream priority range");
  }
  StreamPriorityRange out;
  CUresult result = push(primary);
  if (result == CUDA_SUCCESS) {
    result = range(&out.least, &out.greatest);
    CUcontext popped = nullptr;
    pop(&popped);
  }
  release(handle);
  if (result != CUDA_SUCCESS) {
    throw Error(ErrorKind::other, "stream priority: cuCtxGetStreamPriorityRange on device " + std::to_string(device) +
                                      ": " + driver.error_text(result));
  }
  return out;
}

void check_stream_priority(int device, int priority) {
  const StreamPriorityRange range = stream_priority_range(device);
  if (priority > range.least || priority < range.greatest) {
    throw UsageError("stream priority " + std::to_string(priority) + " lies outside device " + std::to_string(device) +
                     "'s range, " + std::to_string(range.least) + " (default, lowest) to " + std::to_string(range.greatest) +
                     " (highest)");
  }
}

}  // namespace kiln::device
