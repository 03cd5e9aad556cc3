// kiln IK plugin, split form: the host part. Interface "kiln.ik/1" like the nvcc form
// (ik_plugin.cu) from the same instance code (ik_solver.hpp), but plain C++: built by any C++17
// compiler (g++, aarch64-linux-gnu-g++ for a Jetson), linked to nothing CUDA. cuda.h is included
// for the driver's types and CUDA_VERSION only.
//
// Its device code is a separate kiln artifact of device images (ik_kernels.cu built by NVRTC:
// cubins for the declared archs, e.g. sm_87 and sm_110, plus PTX), named at build time by
//   KILN_IK_KERNELS_CONSUMER (default "kiln-ik") and KILN_IK_KERNELS_NAME (required),
// which activate(d >= 0) asks its host for through "kiln.host.kernels/1": get_kernel (the host
// resolves, checks and loads the images and picks the one device d runs), get_driver_proc (every
// driver call below: memory, copies, streams, events) and launch. activate(-1) needs none of it:
// the host path runs with no driver, no device and no kernels artifact.
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "ik_params.hpp"
#include "ik_solver.hpp"
#include "kiln/ext/host_kernels.h"
#include "kiln/plugin.hpp"

#ifndef KILN_IK_PLUGIN_ID
#define KILN_IK_PLUGIN_ID "org.kiln.ik"
#endif
#ifndef KILN_IK_KERNELS_CONSUMER
#define KILN_IK_KERNELS_CONSUMER "kiln-ik"
#endif
#ifndef KILN_IK_KERNELS_NAME
#error "define KILN_IK_KERNELS_NAME: the kiln artifact (device images of ik_kernels.cu) this host part launches"
#endif
#define KILN_IK_PLUGIN_VERSION "1.1.0+split"

namespace {

constexpr const char *kKernelName = "kiln_ik_solve_kernel";  // extern "C" in ik_kernels.cu

// The Device policy of ik_solver.hpp over driver entry points the host hands out.
class DriverDevice {
 public:
  explicit DriverDevice(const kiln_host_services *host) noexcept : host_(host) {}

  // [setup-thread] The split form runs in the device's primary context, where the host loaded its
  // kernels (kiln.host.kernels/1), so it cannot run in a context the host chose; a stream priority
  // it can take.
  kiln_status place(const kiln_activate_params &params, kiln::plugin::Message &message) noexcept {
    if ((params.flags & KILN_ACTIVATE_IN_CURRENT_CONTEXT) != 0) {
      message.set("activate: the split form runs in the device's primary context, where kiln.host.kernels/1 loads "
                  "its kernels; it cannot run in a GPU partition: use the nvcc form there, or a stream priority alone");
      return KILN_ERR_UNSUPPORTED;
    }
    priority_ = params.stream_priority;
    return KILN_OK;
  }

  kiln_status open(int32_t ordinal, size_t bytes, unsigned char **device_block, unsigned char **pinned_block,
                   kiln::plugin::Message &message) noexcept {
    ordinal_ = ordinal;
    kernels_ = service();
    if (kernels_ == nullptr) {
      message.set("activate: the host offers no " KILN_HOST_KERNELS_SERVICE_ID
                  ", which the split form needs for its device code (load it through kiln::Runtime)");
      return KILN_ERR_UNSUPPORTED;
    }
    char text[512] = "";
    void *function = nullptr;
    const kiln_status got = kernels_->get_kernel(host_, KILN_IK_KERNELS_CONSUMER, KILN_IK_KERNELS_NAME, kKernelName,
                                                 ordinal, &function, text, sizeof text);
    if (got != KILN_OK) {
      message.format("activate: kernel %s of " KILN_IK_KERNELS_CONSUMER "/" KILN_IK_KERNELS_NAME ": %s", kKernelName, text);
      return got;
    }
    function_ = static_cast<CUfunction>(function);
    std::snprintf(image_, sizeof image_, "%s", text);  // which image the host chose, and why
    kiln_status status = procs(message);
    if (status != KILN_OK) return status;
    CUdevice device = 0;
    if (!check(device_get_(&device, ordinal), "activate: cuDeviceGet", message)) return status_;
    if (!check(retain_(&context_, device), "activate: cuDevicePrimaryCtxRetain", message)) {
      context_ = nullptr;
      return status_;
    }
    device_ = device;
    if ((status = select("activate: cuCtxSetCurrent", message)) != KILN_OK || (status = check_params(message)) != KILN_OK)
      return status;
    CUdeviceptr block = 0;
    void *pinned = nullptr;
    if (!check(stream_create_(&stream_, CU_STREAM_NON_BLOCKING, priority_), "activate: cuStreamCreateWithPriority",
               message) ||
        !check(event_create_(&done_, CU_EVENT_DISABLE_TIMING), "activate: cuEventCreate", message) ||
        !check(alloc_(&block, bytes), "activate: cuMemAlloc of the solver's buffers", message))
      return status_;
    device_block_ = block;
    if (!check(host_alloc_(&pinned, bytes, 0), "activate: cuMemHostAlloc of the staging buffers", message))
      return status_;
    pinned_block_ = pinned;
    if (!check(memset_(device_block_, 0, bytes, stream_), "activate: clearing the solver's buffers", message))
      return status_;
    *device_block = reinterpret_cast<unsigned char *>(static_cast<uintptr_t>(device_block_));
    *pinned_block = static_cast<unsigned char *>(pinned_block_);
    return KILN_OK;
  }

  kiln_status select(const char *what, kiln::plugin::Message &message) noexcept {
    return check(set_current_(context_), what, message) ? KILN_OK : status_;
  }
  // A copy onto itself is none: an instance of a few slots has its arrays in the pinned block alone
  // (ik_solver.hpp), so its copies name the same memory on both sides.
  kiln_status to_device(void *dst, const void *src, size_t bytes, void *stream, const char *what,
                        kiln::plugin::Message &message) noexcept {
    if (dst == src) return KILN_OK;
    return check(to_device_(pointer(dst), src, bytes, static_cast<CUstream>(stream)), what, message) ? KILN_OK
                                                                                                     : status_;
  }
  kiln_status to_host(void *dst, const void *src, size_t bytes, void *stream, const char *what,
                      kiln::plugin::Message &message) noexcept {
    if (dst == src) return KILN_OK;
    return check(to_host_(dst, pointer(src), bytes, static_cast<CUstream>(stream)), what, message) ? KILN_OK
                                                                                                   : status_;
  }
  // [control-thread] The host's launch allocates nothing on success; the message only on failure.
  kiln_status launch(const KernelParams &params, unsigned blocks, void *stream, const char *what,
                     kiln::plugin::Message &message) noexcept {
    void *arguments[] = {const_cast<KernelParams *>(&params)};
    const uint32_t grid[3] = {blocks, 1, 1};
    const uint32_t block[3] = {kBlock, 1, 1};
    char text[256] = "";
    const kiln_status status =
        kernels_->launch(host_, ordinal_, function_, grid, block, 0, stream, arguments, text, sizeof text);
    if (status != KILN_OK) message.format("%s failed on device %d: %s", what, static_cast<int>(ordinal_), text);
    return status;
  }
  kiln_status synchronize(void *stream, const char *what, kiln::plugin::Message &message) noexcept {
    return check(stream_synchronize_(static_cast<CUstream>(stream)), what, message) ? KILN_OK : status_;
  }
  kiln_status record(void *stream, kiln::plugin::Message &message) noexcept {
    return check(event_record_(done_, static_cast<CUstream>(stream)), "solve: cuEventRecord", message) ? KILN_OK
                                                                                                      : status_;
  }
  kiln_status wait_event(kiln::plugin::Message &message) noexcept {
    return check(event_synchronize_(done_), "wait: the IK solve", message) ? KILN_OK : status_;
  }
  bool finished() noexcept { return event_query_(done_) != CUDA_ERROR_NOT_READY; }
  void *stream() const noexcept { return stream_; }
  void describe(char *text, size_t size) const noexcept {
    int registers = -1, local = -1;
    if (function_attribute_ != nullptr) {
      function_attribute_(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function_);
      function_attribute_(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function_);
    }
    std::snprintf(text, size, "kernel %d registers, %d bytes local memory per thread (%s)", registers, local, image_);
  }

  void close() noexcept {
    if (context_ != nullptr) {
      set_current_(context_);
      if (stream_ != nullptr) stream_synchronize_(stream_);
      if (done_ != nullptr) event_destroy_(done_);
      if (stream_ != nullptr) stream_destroy_(stream_);
      if (device_block_ != 0) free_(device_block_);
      if (pinned_block_ != nullptr) host_free_(pinned_block_);
      release_(device_);
    }
    context_ = nullptr;
    stream_ = nullptr;
    done_ = nullptr;
    device_block_ = 0;
    pinned_block_ = nullptr;
    function_ = nullptr;  // the host owns it; asked for again at the next activate
  }

 private:
  static CUdeviceptr pointer(const void *address) noexcept {
    return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(address));
  }

  const kiln_host_kernels_v1 *service() const noexcept {
    if (host_ == nullptr || host_->struct_size < offsetof(kiln_host_services, get_service) + sizeof(void *) ||
        host_->get_service == nullptr)
      return nullptr;
    const auto *kernels = static_cast<const kiln_host_kernels_v1 *>(host_->get_service(host_, KILN_HOST_KERNELS_SERVICE_ID));
    return kernels != nullptr && kernels->struct_size >= KILN_HOST_KERNELS_V1_MIN_SIZE ? kernels : nullptr;
  }

  // One driver entry point by base name, typed as cuda.h declares it for CUDA_VERSION (cuda.h maps
  // cuMemAlloc to cuMemAlloc_v2 and so on, the variant get_driver_proc returns for that version).
  template <class Fn>
  kiln_status proc(const char *symbol, Fn *out, kiln::plugin::Message &message) noexcept {
    void *pointer = nullptr;
    char text[256] = "";
    const kiln_status status = kernels_->get_driver_proc(host_, symbol, CUDA_VERSION, &pointer, text, sizeof text);
    if (status != KILN_OK) {
      message.format("activate: the driver entry point %s: %s", symbol, text);
      return status;
    }
    *out = reinterpret_cast<Fn>(pointer);
    return KILN_OK;
  }

  kiln_status procs(kiln::plugin::Message &message) noexcept {
    kiln_status s = KILN_OK;
#define KILN_IK_PROC(name, member) \
  if ((s = proc(#name, &member, message)) != KILN_OK) return s
    KILN_IK_PROC(cuGetErrorName, error_name_);
    KILN_IK_PROC(cuGetErrorString, error_string_);
    KILN_IK_PROC(cuDeviceGet, device_get_);
    KILN_IK_PROC(cuDevicePrimaryCtxRetain, retain_);
    KILN_IK_PROC(cuDevicePrimaryCtxRelease, release_);
    KILN_IK_PROC(cuCtxSetCurrent, set_current_);
    KILN_IK_PROC(cuStreamCreateWithPriority, stream_create_);
    KILN_IK_PROC(cuStreamDestroy, stream_destroy_);
    KILN_IK_PROC(cuStreamSynchronize, stream_synchronize_);
    KILN_IK_PROC(cuEventCreate, event_create_);
    KILN_IK_PROC(cuEventDestroy, event_destroy_);
    KILN_IK_PROC(cuEventRecord, event_record_);
    KILN_IK_PROC(cuEventQuery, event_query_);
    KILN_IK_PROC(cuEventSynchronize, event_synchronize_);
    KILN_IK_PROC(cuMemAlloc, alloc_);
    KILN_IK_PROC(cuMemFree, free_);
    KILN_IK_PROC(cuMemHostAlloc, host_alloc_);
    KILN_IK_PROC(cuMemFreeHost, host_free_);
    KILN_IK_PROC(cuMemsetD8Async, memset_);
    KILN_IK_PROC(cuMemcpyHtoDAsync, to_device_);
    KILN_IK_PROC(cuMemcpyDtoHAsync, to_host_);
    KILN_IK_PROC(cuFuncGetAttribute, function_attribute_);
#undef KILN_IK_PROC
    // Optional (drivers >= 12.4): lets activate prove the kernel takes this KernelParams.
    char ignored[8];
    kiln::plugin::Message quiet(ignored, sizeof ignored);
    if (proc("cuFuncGetParamInfo", &param_info_, quiet) != KILN_OK) param_info_ = nullptr;
    return KILN_OK;
  }

  // The kernel must take exactly one parameter of sizeof(KernelParams) bytes: images built from
  // other sources than this host part (another ik_params.hpp) are refused here, not run.
  kiln_status check_params(kiln::plugin::Message &message) noexcept {
    if (param_info_ == nullptr) return KILN_OK;
    size_t offset = 0, size = 0, next_offset = 0, next_size = 0;
    if (!check(param_info_(function_, 0, &offset, &size), "activate: cuFuncGetParamInfo", message)) return status_;
    const bool extra = param_info_(function_, 1, &next_offset, &next_size) == CUDA_SUCCESS;
    if (size != sizeof(KernelParams) || extra) {
      message.format("activate: the kernel %s of " KILN_IK_KERNELS_CONSUMER "/" KILN_IK_KERNELS_NAME
                     " takes %s%zu bytes as its first parameter, this host part passes one of %zu bytes: the images "
                     "and the host part were built from different solver sources; rebuild both",
                     kKernelName, extra ? "more than one parameter, " : "", size, sizeof(KernelParams));
      return KILN_ERR_UNSUPPORTED;
    }
    return KILN_OK;
  }

  bool check(CUresult result, const char *what, kiln::plugin::Message &message) noexcept {
    if (result == CUDA_SUCCESS) return true;
    status_ = result == CUDA_ERROR_OUT_OF_MEMORY ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DEVICE;
    const char *name = "?", *text = "?";
    if (error_name_ != nullptr) error_name_(result, &name);
    if (error_string_ != nullptr) error_string_(result, &text);
    message.format("%s failed on device %d: %s (%d): %s", what, static_cast<int>(ordinal_), name,
                   static_cast<int>(result), text);
    return false;
  }

  const kiln_host_services *host_;
  const kiln_host_kernels_v1 *kernels_ = nullptr;
  int32_t ordinal_ = -1;
  int32_t priority_ = 0;  // of the stream open creates
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;  // the device's primary context, retained while open
  CUfunction function_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent done_ = nullptr;
  CUdeviceptr device_block_ = 0;
  void *pinned_block_ = nullptr;
  char image_[256] = "";
  kiln_status status_ = KILN_OK;  // of the last failed call

  decltype(&::cuGetErrorName) error_name_ = nullptr;
  decltype(&::cuGetErrorString) error_string_ = nullptr;
  decltype(&::cuDeviceGet) device_get_ = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) retain_ = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) release_ = nullptr;
  decltype(&::cuCtxSetCurrent) set_current_ = nullptr;
  decltype(&::cuStreamCreateWithPriority) stream_create_ = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy_ = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize_ = nullptr;
  decltype(&::cuEventCreate) event_create_ = nullptr;
  decltype(&::cuEventDestroy) event_destroy_ = nullptr;
  decltype(&::cuEventRecord) event_record_ = nullptr;
  decltype(&::cuEventQuery) event_query_ = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize_ = nullptr;
  decltype(&::cuMemAlloc) alloc_ = nullptr;
  decltype(&::cuMemFree) free_ = nullptr;
  decltype(&::cuMemHostAlloc) host_alloc_ = nullptr;
  decltype(&::cuMemFreeHost) host_free_ = nullptr;
  decltype(&::cuMemsetD8Async) memset_ = nullptr;
  decltype(&::cuMemcpyHtoDAsync) to_device_ = nullptr;
  decltype(&::cuMemcpyDtoHAsync) to_host_ = nullptr;
  decltype(&::cuFuncGetAttribute) function_attribute_ = nullptr;
  decltype(&::cuFuncGetParamInfo) param_info_ = nullptr;
};

using IkSplitPlugin = IkSolver<DriverDevice>;

}  // namespace

KILN_PLUGIN(IkSplitPlugin, KILN_IK_PLUGIN_ID, KILN_IK_PLUGIN_VERSION, KILN_IK_INTERFACE_ID, KILN_SELFTEST_INTERFACE_ID,
            KILN_ROBOTMODEL_INTERFACE_ID)
