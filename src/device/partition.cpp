// kiln: GpuPartition (include/kiln/placement.hpp) — a share of a device's SMs in a CUDA green
// context, through the driver's resource API: cuDeviceGetDevResource (the device's SMs, its
// minimum partition and alignment) -> cuDevSmResourceSplitByCount (the share and the rest) ->
// cuDevResourceGenerateDesc -> cuGreenCtxCreate -> cuCtxFromGreenCtx. Every entry point comes
// through cuGetProcAddress (device/driver.hpp), so a driver without green contexts is reported,
// not a missing symbol at load.
#include <cuda.h>

#include <cmath>
#include <mutex>
#include <string>
#include <utility>

#include <kiln/errors.hpp>
#include <kiln/placement.hpp>

#include "device/driver.hpp"

namespace kiln {

struct GpuPartition::Context {
  CUgreenCtx green = nullptr;
  CUcontext context = nullptr;
  decltype(&::cuGreenCtxDestroy) destroy = nullptr;
  decltype(&::cuCtxPushCurrent) push = nullptr;
  decltype(&::cuCtxPopCurrent) pop = nullptr;
  // The driver lets a green context be current on one thread at a time.
  mutable std::mutex current;

  static std::shared_ptr<const GpuPartition> make(std::unique_ptr<Context> handles, int device, unsigned sms,
                                                   unsigned device_sms, const std::string &name) {
    return std::shared_ptr<const GpuPartition>(
        new GpuPartition(std::move(handles), device, sms, device_sms, name));
  }
};

namespace {

using device::Driver;

struct ResourceApi {
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetDevResource) get_resource = nullptr;
  decltype(&::cuDevSmResourceSplitByCount) split = nullptr;
  decltype(&::cuDevResourceGenerateDesc) describe = nullptr;
  decltype(&::cuGreenCtxCreate) create = nullptr;
  decltype(&::cuCtxFromGreenCtx) as_context = nullptr;
  decltype(&::cuGreenCtxDestroy) destroy = nullptr;
  decltype(&::cuCtxPushCurrent) push = nullptr;
  decltype(&::cuCtxPopCurrent) pop = nullptr;
};

std::string driver_text(const Driver &driver) {
  return driver.driver_version() != 0 ? "driver " + device::driver_version_text(driver.driver_version()) + " (" +
                                            driver.library() + ")"
                                      : driver.library();
}

[[noreturn]] void no_green_contexts(const std::string &why) {
  throw IncompatibleError(
      "GPU partition",
      {Reason{"green_contexts", "required", why,
              "update the NVIDIA driver (CUDA 12.4 or newer) or place the solver with a stream priority alone "
              "(ActivateOptions::stream_priority, SwapOptions::stream_priority)"}});
}

ResourceApi resource_api(Driver &driver) {
  ResourceApi api;
  api.device_get = driver.api().device_get;
  api.device_get_name = driver.api().device_get_name;
  api.get_resource = driver.proc_as<decltype(api.get_resource)>("cuDeviceGetDevResource");
  api.split = driver.proc_as<decltype(api.split)>("cuDevSmResourceSplitByCount");
  api.describe = driver.proc_as<decltype(api.describe)>("cuDevResourceGenerateDesc");
  api.create = driver.proc_as<decltype(api.create)>("cuGreenCtxCreate");
  api.as_context = driver.proc_as<decltype(api.as_context)>("cuCtxFromGreenCtx");
  api.destroy = driver.proc_as<decltype(api.destroy)>("cuGreenCtxDestroy");
  api.push = driver.proc_as<decltype(api.push)>("cuCtxPushCurrent");
  api.pop = driver.proc_as<decltype(api.pop)>("cuCtxPopCurrent");
  if (api.get_resource == nullptr || api.split == nullptr || api.describe == nullptr || api.create == nullptr ||
      api.as_context == nullptr || api.destroy == nullptr) {
    no_green_contexts(driver_text(driver) + " offers no green contexts (cuGreenCtxCreate)");
  }
  if (api.push == nullptr || api.pop == nullptr) {
    throw Error(ErrorKind::other, driver_text(driver) + " offers no cuCtxPushCurrent/cuCtxPopCurrent");
  }
  return api;
}

// A driver call that failed: NOT_SUPPORTED means no green contexts on this device or driver.
void check(const Driver &driver, CUresult result, const char *call, int device) {
  if (result == CUDA_SUCCESS) return;
  const std::string what =
      std::string(call) + " on device " + std::to_string(device) + ": " + driver.error_text(result);
  if (result == CUDA_ERROR_NOT_SUPPORTED) no_green_contexts(what);
  throw Error(ErrorKind::other, "GPU partition: " + what);
}

unsigned wanted_sms(const SmShare &share, unsigned device_sms, unsigned minimum, unsigned alignment, int device) {
  const std::string granularity = "device " + std::to_string(device) + " has " + std::to_string(device_sms) +
                                  " SMs, shares of at least " + std::to_string(minimum) + " in steps of " +
                                  std::to_string(alignment);
  const unsigned count =
      share.count != 0 ? share.count : static_cast<unsigned>(std::ceil(share.fraction * device_sms));
  if (count > device_sms) {
    throw UsageError("GPU partition: " + std::to_string(count) + " SMs asked for, but " + granularity);
  }
  return count;
}

}  // namespace

GpuPartition::GpuPartition(std::unique_ptr<Context> handles, int device, unsigned sm_count, unsigned device_sm_count,
                           std::string device_name)
    : handles_(std::move(handles)),
      context_(handles_->context),
      device_(device),
      sm_count_(sm_count),
      device_sm_count_(device_sm_count),
      device_name_(std::move(device_name)) {}

GpuPartition::~GpuPartition() {
  if (handles_ && handles_->green != nullptr && handles_->destroy != nullptr) handles_->destroy(handles_->green);
}

std::string GpuPartition::describe() const {
  return std::to_string(sm_count_) + " of " + std::to_string(device_sm_count_) + " SMs of device " +
         std::to_string(device_) + " (" + device_name_ + ")";
}

void GpuPartition::run_inside(const std::function<void()> &fn) const {
  std::lock_guard<std::mutex> lock(handles_->current);
  const CUresult pushed = handles_->push(handles_->context);
  if (pushed != CUDA_SUCCESS) {
    throw Error(ErrorKind::other, "GPU partition " + describe() + ": cuCtxPushCurrent: " +
                                      Driver::instance().error_text(pushed));
  }
  struct Pop {
    const Context &handles;
    ~Pop() {
      CUcontext popped = nullptr;
      handles.pop(&popped);
    }
  } pop{*handles_};
  fn();
}

GpuSplit GpuPartition::split(int device, SmShare share) {
  if (share.count == 0 && !(share.fraction > 0 && share.fraction < 1)) {
    throw UsageError("GPU partition of device " + std::to_string(device) + ": SmShare{count 0, fraction " +
                     std::to_string(share.fraction) +
                     "} reserves nothing; give a count of SMs or a fraction in (0, 1) of the device's SMs");
  }
  Driver &driver = Driver::instance();
  if (!driver.ok()) {
    throw Error(ErrorKind::other, "GPU partition of device " + std::to_string(device) +
                                      ": no CUDA device to partition: " + device::without_declare_hint(driver.detail()));
  }
  if (device < 0 || device >= driver.device_count()) {
    throw UsageError("GPU partition: no device " + std::to_string(device) + "; this machine has " +
                     std::to_string(driver.device_count()) + " (ordinals 0 to " +
                     std::to_string(driver.device_count() - 1) + ")");
  }
  const ResourceApi api = resource_api(driver);
  CUdevice handle = 0;
  check(driver, api.device_get(&handle, device), "cuDeviceGet", device);
  char name[256] = "";
  check(driver, api.device_get_name(name, sizeof name, handle), "cuDeviceGetName", device);
  CUdevResource all{};
  check(driver, api.get_resource(handle, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource", device);
  const unsigned count =
      wanted_sms(share, all.sm.smCount, all.sm.minSmPartitionSize, all.sm.smCoscheduledAlignment, device);

  CUdevResource reserved{}, rest{};
  unsigned groups = 1;
  check(driver, api.split(&reserved, &groups, &all, &rest, 0, count), "cuDevSmResourceSplitByCount", device);
  if (groups != 1 || reserved.sm.smCount == 0) {
    throw UsageError("GPU partition: device " + std::to_string(device) + " cannot reserve " + std::to_string(count) +
                     " of its " + std::to_string(all.sm.smCount) + " SMs in one share");
  }
  const auto green_of = [&](CUdevResource &resource) {
    auto handles = std::make_unique<Context>();
    handles->destroy = api.destroy;
    handles->push = api.push;
    handles->pop = api.pop;
    CUdevResourceDesc desc = nullptr;
    check(driver, api.describe(&desc, &resource, 1), "cuDevResourceGenerateDesc", device);
    check(driver, api.create(&handles->green, desc, handle, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate", device);
    const CUresult converted = api.as_context(&handles->context, handles->green);
    if (converted != CUDA_SUCCESS) {
      api.destroy(handles->green);
      check(driver, converted, "cuCtxFromGreenCtx", device);
    }
    return Context::make(std::move(handles), device, resource.sm.smCount, all.sm.smCount, name);
  };
  GpuSplit result;
  result.reserved = green_of(reserved);
  if (rest.sm.smCount > 0) result.rest = green_of(rest);
  return result;
}

}  // namespace kiln
