// kiln's test plugin with device code: interface "kiln.example/1" (abi/kiln/ext/example.h).
//
// create allocates nothing on the device; activate(device_ordinal >= 0) selects the device,
// reserves x/y buffers for max_batch floats plus one int for the arch, creates a stream and
// loads the kernel (so a missing kernel image fails here, not at the first saxpy);
// activate(-1) is host only. saxpy copies in, launches, copies out and synchronises.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "kiln/ext/example.h"
#include "kiln/plugin.hpp"

namespace {

// Written by thread 0 of the kernel: the __CUDA_ARCH__ of the image that actually ran
// (major * 100 + minor * 10), so the host sees which SASS/PTX the driver picked.
__global__ void saxpy_kernel(float a, const float *x, float *y, uint32_t n, int32_t *arch) {
  const uint32_t stride = blockDim.x * gridDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = a * x[i] + y[i];
#ifdef __CUDA_ARCH__
  if (blockIdx.x == 0 && threadIdx.x == 0) *arch = __CUDA_ARCH__;
#endif
}

class Example final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  ~Example() override { release(); }

  kiln_status activate(const kiln_activate_params &params, kiln::plugin::Message &message) override {
    device_ = params.device_ordinal;
    max_batch_ = params.max_batch;
    if (device_ < 0) return KILN_OK;  // host only: host_fma works, saxpy refuses

    // In a partition the host made its context current: stay in it (cudaSetDevice would leave it).
    in_context_ = (params.flags & KILN_ACTIVATE_IN_CURRENT_CONTEXT) != 0;
    if (!in_context_ && !check(cudaSetDevice(device_), "activate: cudaSetDevice", message))
      return status_of(last_error_);
    cudaFuncAttributes attributes{};
    if (!check(cudaFuncGetAttributes(&attributes, saxpy_kernel), "activate: loading the saxpy kernel", message))
      return status_of(last_error_);
    if (!check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, params.stream_priority),
               "activate: cudaStreamCreate", message))
      return status_of(last_error_);
    const size_t bytes = (max_batch_ > 0 ? max_batch_ : 1u) * sizeof(float);
    if (!check(cudaMalloc(&x_, bytes), "activate: cudaMalloc(x)", message) ||
        !check(cudaMalloc(&y_, bytes), "activate: cudaMalloc(y)", message) ||
        !check(cudaMalloc(&arch_, sizeof(int32_t)), "activate: cudaMalloc(arch)", message))
      return status_of(last_error_);
    return KILN_OK;
  }

  void deactivate() noexcept override {
    release();
    device_ = -1;
    max_batch_ = 0;
  }

  const void *get_interface(const char *interface_id) const noexcept override {
    return std::strcmp(interface_id, KILN_EXAMPLE_INTERFACE_ID) == 0 ? &table : nullptr;
  }

  kiln_status saxpy(float a, const float *x, float *y, uint32_t n, kiln::plugin::Message &message) noexcept {
    if (!active()) {
      message.set("saxpy: the instance is not active; call activate first");
      return KILN_ERR_STATE;
    }
    if (device_ < 0) {
      message.set("saxpy: the instance was activated host only (device_ordinal -1); activate it on a device");
      return KILN_ERR_STATE;
    }
    if (n > max_batch_) {
      message.format("saxpy: n = %u exceeds max_batch = %u reserved at activate", n, max_batch_);
      return KILN_ERR_CAPACITY;
    }
    if (n == 0) return KILN_OK;
    if (x == nullptr || y == nullptr) {
      message.set("saxpy: x and y must not be NULL");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    const size_t bytes = size_t{n} * sizeof(float);
    // The current device is per thread: this call may come from another thread than activate.
    if (!check(cudaSetDevice(device_), "saxpy: cudaSetDevice", message) ||
        !check(cudaMemcpyAsync(x_, x, bytes, cudaMemcpyHostToDevice, stream_), "saxpy: copying x to the device",
               message) ||
        !check(cudaMemcpyAsync(y_, y, bytes, cudaMemcpyHostToDevice, stream_), "saxpy: copying y to the device",
               message))
      return status_of(last_error_);
    const uint32_t threads = 256;
    uint32_t blocks = (n + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    saxpy_kernel<<<blocks, threads, 0, stream_>>>(a, x_, y_, n, arch_);
    if (!check(cudaGetLastError(), "saxpy: launching the kernel", message)) return status_of(last_error_);
    int32_t arch = 0;
    if (!check(cudaMemcpyAsync(y, y_, bytes, cudaMemcpyDeviceToHost, stream_), "saxpy: copying y back", message) ||
        !check(cudaMemcpyAsync(&arch, arch_, sizeof arch, cudaMemcpyDeviceToHost, stream_),
               "saxpy: copying the arch back", message) ||
        !check(cudaStreamSynchronize(stream_), "saxpy: running the kernel", message))
      return status_of(last_error_);
    last_arch_.store(arch / 10, std::memory_order_relaxed);
    return KILN_OK;
  }

  int32_t last_device_arch() const noexcept { return last_arch_.load(std::memory_order_relaxed); }

  static const kiln_example_v1 table;

 private:
  bool check(cudaError_t error, const char *what, kiln::plugin::Message &message) noexcept {
    if (error == cudaSuccess) return true;
    last_error_ = error;
    message.format("%s failed on device %d: %s (%d): %s", what, static_cast<int>(device_), cudaGetErrorName(error),
                   static_cast<int>(error), cudaGetErrorString(error));
    return false;
  }
  static kiln_status status_of(cudaError_t error) noexcept {
    return error == cudaErrorMemoryAllocation ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DEVICE;
  }
  void release() noexcept {
    if (x_ == nullptr && y_ == nullptr && arch_ == nullptr && stream_ == nullptr) return;
    if (device_ >= 0 && !in_context_) cudaSetDevice(device_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    cudaFree(x_);
    cudaFree(y_);
    cudaFree(arch_);
    stream_ = nullptr;
    x_ = y_ = nullptr;
    arch_ = nullptr;
  }

  int32_t device_ = -1;
  uint32_t max_batch_ = 0;
  bool in_context_ = false;  // activated in the host's context (a GPU partition)
  cudaStream_t stream_ = nullptr;
  float *x_ = nullptr;
  float *y_ = nullptr;
  int32_t *arch_ = nullptr;
  cudaError_t last_error_ = cudaSuccess;
  std::atomic<int32_t> last_arch_{0};
};

double example_host_fma(const kiln_instance *instance, double a, double b, double c) {
  (void)instance;
  return a * b + c;
}

kiln_status example_saxpy(kiln_instance *instance, float a, const float *x, float *y, uint32_t n, char *message,
                  size_t message_size) {
  kiln::plugin::Message text(message, message_size);
  if (instance == nullptr) {
    text.set("saxpy: instance is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  return kiln::plugin::Instance::from<Example>(instance).saxpy(a, x, y, n, text);
}

int32_t example_last_device_arch(const kiln_instance *instance) {
  return instance == nullptr ? 0 : kiln::plugin::Instance::from<Example>(instance).last_device_arch();
}

const kiln_example_v1 Example::table = {sizeof(kiln_example_v1), &example_host_fma, &example_saxpy,
                                          &example_last_device_arch};

}  // namespace

KILN_PLUGIN(Example, "org.kiln.test.example", "1.0.0", KILN_EXAMPLE_INTERFACE_ID)
