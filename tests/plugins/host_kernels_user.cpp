// kiln's host-only test plugin that runs device kernels through its host: interface
// "kiln.test.host_kernels/1" (host_kernels_user.h).
//
// Built by g++ alone and linked to nothing CUDA: the kernel comes from a device-image artifact
// the host loads ("kiln.host.kernels/1" get_kernel), the driver calls (memory, copies, context)
// from the host's driver (get_driver_proc), and the launch goes through the host (launch).
// cuda.h is included for the entry points' types and CUDA_VERSION only.
#include <cuda.h>

#include <cstdint>
#include <cstring>

#include "host_kernels_user.h"
#include "kiln/ext/host_kernels.h"
#include "kiln/plugin.hpp"

namespace {

class User final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  ~User() override { release(); }

  const void *get_interface(const char *interface_id) const noexcept override {
    return std::strcmp(interface_id, KILN_TEST_HOST_KERNELS_INTERFACE_ID) == 0 ? &table : nullptr;
  }

  void deactivate() noexcept override { release(); }

  const kiln_host_kernels_v1 *service() const noexcept {
    const kiln_host_services *h = host();
    if (h == nullptr || h->struct_size < offsetof(kiln_host_services, get_service) + sizeof(void *) ||
        h->get_service == nullptr) {
      return nullptr;
    }
    const auto *kernels = static_cast<const kiln_host_kernels_v1 *>(h->get_service(h, KILN_HOST_KERNELS_SERVICE_ID));
    return kernels != nullptr && kernels->struct_size >= KILN_HOST_KERNELS_V1_MIN_SIZE ? kernels : nullptr;
  }

  // On failure the host's message goes to (text, size); on success that buffer is left alone
  // (it holds get_kernel's "which image and why").
  template <class Fn>
  kiln_status proc(const char *symbol, Fn *out, char *text, size_t size) const {
    void *pointer = nullptr;
    char scratch[512] = "";
    const kiln_status status = service()->get_driver_proc(host(), symbol, CUDA_VERSION, &pointer, scratch, sizeof scratch);
    if (status != KILN_OK) {
      kiln::plugin::Message(text, size).set(scratch);
      return status;
    }
    *out = reinterpret_cast<Fn>(pointer);
    return KILN_OK;
  }

  kiln_status prepare(const char *consumer, const char *name, const char *kernel, int32_t device, char *text,
                      size_t size) {
    kiln::plugin::Message message(text, size);
    const kiln_host_kernels_v1 *kernels = service();
    if (kernels == nullptr) {
      message.set("the host offers no " KILN_HOST_KERNELS_SERVICE_ID);
      return KILN_ERR_UNSUPPORTED;
    }
    void *function = nullptr;
    kiln_status status = kernels->get_kernel(host(), consumer, name, kernel, device, &function, text, size);
    if (status != KILN_OK) return status;
    // The driver calls saxpy makes, and the device's primary context (held until release).
    release();
    if ((status = proc("cuDeviceGet", &device_get_, text, size)) != KILN_OK) return status;
    if ((status = proc("cuDevicePrimaryCtxRetain", &retain_, text, size)) != KILN_OK) return status;
    if ((status = proc("cuDevicePrimaryCtxRelease", &release_, text, size)) != KILN_OK) return status;
    if ((status = proc("cuCtxSetCurrent", &set_current_, text, size)) != KILN_OK) return status;
    if ((status = proc("cuStreamSynchronize", &synchronize_, text, size)) != KILN_OK) return status;
    if ((status = proc("cuMemAlloc", &alloc_, text, size)) != KILN_OK) return status;
    if ((status = proc("cuMemFree", &free_, text, size)) != KILN_OK) return status;
    if ((status = proc("cuMemcpyHtoD", &to_device_, text, size)) != KILN_OK) return status;
    if ((status = proc("cuMemcpyDtoH", &to_host_, text, size)) != KILN_OK) return status;
    if (device_get_(&cu_device_, device) != CUDA_SUCCESS || retain_(&context_, cu_device_) != CUDA_SUCCESS) {
      message.format("cannot retain the primary context of device %d", static_cast<int>(device));
      context_ = nullptr;
      return KILN_ERR_DEVICE;
    }
    function_ = function;
    device_ = device;
    return KILN_OK;
  }

  kiln_status saxpy(float a, const float *x, float *y, int32_t n, char *text, size_t size) {
    kiln::plugin::Message message(text, size);
    if (function_ == nullptr || context_ == nullptr) {
      message.set("saxpy: prepare a kernel first");
      return KILN_ERR_STATE;
    }
    if (x == nullptr || y == nullptr || n <= 0) {
      message.set("saxpy: x and y must be arrays of n > 0 floats");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (set_current_(context_) != CUDA_SUCCESS) {
      message.set("saxpy: cuCtxSetCurrent failed");
      return KILN_ERR_DEVICE;
    }
    const size_t bytes = sizeof(float) * static_cast<size_t>(n);
    CUdeviceptr dx = 0, dy = 0;
    kiln_status status = KILN_OK;
    if (alloc_(&dx, bytes) != CUDA_SUCCESS || alloc_(&dy, bytes) != CUDA_SUCCESS) {
      message.set("saxpy: cuMemAlloc failed");
      status = KILN_ERR_OUT_OF_MEMORY;
    } else if (to_device_(dx, x, bytes) != CUDA_SUCCESS || to_device_(dy, y, bytes) != CUDA_SUCCESS) {
      message.set("saxpy: cuMemcpyHtoD failed");
      status = KILN_ERR_DEVICE;
    } else {
      int count = n;
      void *params[] = {&a, &dx, &dy, &count};
      const uint32_t block[3] = {128, 1, 1};
      const uint32_t grid[3] = {static_cast<uint32_t>((n + 127) / 128), 1, 1};
      status = service()->launch(host(), device_, function_, grid, block, 0, nullptr, params, text, size);
      if (status == KILN_OK && synchronize_(nullptr) != CUDA_SUCCESS) {
        message.set("saxpy: the kernel failed (cuStreamSynchronize)");
        status = KILN_ERR_DEVICE;
      }
      if (status == KILN_OK && to_host_(y, dy, bytes) != CUDA_SUCCESS) {
        message.set("saxpy: cuMemcpyDtoH failed");
        status = KILN_ERR_DEVICE;
      }
    }
    if (dx != 0) free_(dx);
    if (dy != 0) free_(dy);
    return status;
  }

  const void *function() const noexcept { return function_; }

  kiln_status probe_driver(const char *symbol, char *text, size_t size) const {
    const kiln_host_kernels_v1 *kernels = service();
    if (kernels == nullptr) {
      kiln::plugin::Message(text, size).set("the host offers no " KILN_HOST_KERNELS_SERVICE_ID);
      return KILN_ERR_UNSUPPORTED;
    }
    void *pointer = nullptr;
    return kernels->get_driver_proc(host(), symbol, CUDA_VERSION, &pointer, text, size);
  }

  static const kiln_test_host_kernels_v1 table;

 private:
  void release() noexcept {
    if (context_ != nullptr && release_ != nullptr) release_(cu_device_);
    context_ = nullptr;
    function_ = nullptr;
  }

  void *function_ = nullptr;
  int32_t device_ = 0;
  CUdevice cu_device_ = 0;
  CUcontext context_ = nullptr;
  decltype(&::cuDeviceGet) device_get_ = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) retain_ = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) release_ = nullptr;
  decltype(&::cuCtxSetCurrent) set_current_ = nullptr;
  // Types as cuGetProcAddress gives them for CUDA_VERSION: where cuda.h's declaration differs
  // (cuCtxSynchronize at 13.0 is the _v2 taking a context) take cudaTypedefs.h's PFN_*_v<N>.
  decltype(&::cuStreamSynchronize) synchronize_ = nullptr;
  decltype(&::cuMemAlloc) alloc_ = nullptr;
  decltype(&::cuMemFree) free_ = nullptr;
  decltype(&::cuMemcpyHtoD) to_device_ = nullptr;
  decltype(&::cuMemcpyDtoH) to_host_ = nullptr;
};

kiln_status user_prepare(kiln_instance *instance, const char *consumer, const char *name, const char *kernel,
                         int32_t device, char *message, size_t message_size) {
  if (instance == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  return kiln::plugin::Instance::from<User>(instance).prepare(consumer, name, kernel, device, message, message_size);
}

kiln_status user_saxpy(kiln_instance *instance, float a, const float *x, float *y, int32_t n, char *message,
                       size_t message_size) {
  if (instance == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  return kiln::plugin::Instance::from<User>(instance).saxpy(a, x, y, n, message, message_size);
}

const void *user_function(const kiln_instance *instance) {
  return instance == nullptr ? nullptr : kiln::plugin::Instance::from<User>(instance).function();
}

kiln_status user_probe_driver(kiln_instance *instance, const char *symbol, char *message, size_t message_size) {
  if (instance == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  return kiln::plugin::Instance::from<User>(instance).probe_driver(symbol, message, message_size);
}

const kiln_test_host_kernels_v1 User::table = {sizeof(kiln_test_host_kernels_v1), &user_prepare, &user_saxpy,
                                                &user_function, &user_probe_driver};

}  // namespace

KILN_PLUGIN(User, "org.kiln.test.host_kernels_user", "1.0.0", KILN_TEST_HOST_KERNELS_INTERFACE_ID)
