// kiln test plugin: "kiln.test.placement/1" (placement_probe.h), a plugin that honours
// KILN_ACTIVATE_IN_CURRENT_CONTEXT and stream_priority and reports where its kernel ran.
// KILN_TEST_PLACEMENT_PROBE=set-device at activate makes it call cudaSetDevice whatever the host
// asked: the mistake the host must catch.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "kiln/plugin.hpp"
#include "placement_probe.h"

namespace {

constexpr uint32_t kMaxBlocks = 4096;
constexpr uint32_t kMaxSms = 1024;

__global__ void note_sm(uint32_t *sm_of_block) {
  uint32_t sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  // Stay a while, so that the blocks spread over every SM the stream may use.
  const long long start = clock64();
  while (clock64() - start < 20000) {
  }
  if (threadIdx.x == 0) sm_of_block[blockIdx.x] = sm;
}

class PlacementProbe final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  ~PlacementProbe() override { release(); }

  kiln_status activate(const kiln_activate_params &params, kiln::plugin::Message &message) override {
    if (params.device_ordinal < 0) {
      message.set("activate: the placement probe needs a device");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    device_ = params.device_ordinal;
    sm_count_ = params.sm_count;
    const char *mode = std::getenv("KILN_TEST_PLACEMENT_PROBE");
    const bool set_device = (params.flags & KILN_ACTIVATE_IN_CURRENT_CONTEXT) == 0 ||
                            (mode != nullptr && std::strcmp(mode, "set-device") == 0);
    if ((set_device && !check(cudaSetDevice(device_), "activate: cudaSetDevice", message)) ||
        !check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, params.stream_priority),
               "activate: cudaStreamCreateWithPriority", message) ||
        !check(cudaMalloc(&device_sms_, kMaxBlocks * sizeof(uint32_t)), "activate: cudaMalloc", message) ||
        !check(cudaMallocHost(&host_sms_, kMaxBlocks * sizeof(uint32_t)), "activate: cudaMallocHost", message))
      return KILN_ERR_DEVICE;
    return KILN_OK;
  }

  void deactivate() noexcept override { release(); }

  const void *get_interface(const char *interface_id) const noexcept override {
    return std::strcmp(interface_id, KILN_TEST_PLACEMENT_INTERFACE_ID) == 0 ? &table : nullptr;
  }

  kiln_status run(uint32_t blocks, uint32_t *distinct, int32_t *priority, uint32_t *sm_count,
                  kiln::plugin::Message &message) noexcept {
    if (stream_ == nullptr) {
      message.set("run: not active");
      return KILN_ERR_STATE;
    }
    if (blocks == 0 || blocks > kMaxBlocks) {
      message.format("run: blocks = %u, not in 1..%u", blocks, kMaxBlocks);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    note_sm<<<blocks, 64, 0, stream_>>>(device_sms_);
    if (!check(cudaGetLastError(), "run: launch", message) ||
        !check(cudaMemcpyAsync(host_sms_, device_sms_, blocks * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_),
               "run: copy back", message) ||
        !check(cudaStreamSynchronize(stream_), "run: synchronize", message))
      return KILN_ERR_DEVICE;
    bool seen[kMaxSms] = {};
    uint32_t count = 0;
    for (uint32_t i = 0; i < blocks; ++i) {
      const uint32_t sm = host_sms_[i] < kMaxSms ? host_sms_[i] : kMaxSms - 1;
      if (!seen[sm]) ++count;
      seen[sm] = true;
    }
    int got = 0;
    if (!check(cudaStreamGetPriority(stream_, &got), "run: cudaStreamGetPriority", message)) return KILN_ERR_DEVICE;
    *distinct = count;
    *priority = got;
    *sm_count = sm_count_;
    return KILN_OK;
  }

  static const kiln_test_placement_v1 table;

 private:
  bool check(cudaError_t error, const char *what, kiln::plugin::Message &message) noexcept {
    if (error == cudaSuccess) return true;
    message.format("%s failed on device %d: %s", what, static_cast<int>(device_), cudaGetErrorString(error));
    return false;
  }
  void release() noexcept {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (device_sms_ != nullptr) cudaFree(device_sms_);
    if (host_sms_ != nullptr) cudaFreeHost(host_sms_);
    stream_ = nullptr;
    device_sms_ = nullptr;
    host_sms_ = nullptr;
  }

  int32_t device_ = -1;
  uint32_t sm_count_ = 0;
  cudaStream_t stream_ = nullptr;
  uint32_t *device_sms_ = nullptr;
  uint32_t *host_sms_ = nullptr;
};

kiln_status run_entry(kiln_instance *instance, uint32_t blocks, uint32_t *distinct, int32_t *priority,
                      uint32_t *sm_count, char *message, size_t size) {
  kiln::plugin::Message text(message, size);
  if (instance == nullptr || distinct == nullptr || priority == nullptr || sm_count == nullptr) {
    text.set("run: NULL argument");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  return kiln::plugin::Instance::from<PlacementProbe>(instance).run(blocks, distinct, priority, sm_count, text);
}

const kiln_test_placement_v1 PlacementProbe::table = {sizeof(kiln_test_placement_v1), run_entry};

}  // namespace

KILN_PLUGIN(PlacementProbe, "org.kiln.test.placement", "1.0.0", KILN_TEST_PLACEMENT_INTERFACE_ID)
