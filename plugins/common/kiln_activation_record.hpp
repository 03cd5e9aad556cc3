// kiln plugins: what an instance's info() reports from any thread about its activation, shared by
// kiln.ik and kiln.trajopt. Written on the setup thread by activate / deactivate; info() may run
// concurrently, so every field is an atomic and is_active publishes the rest (release / acquire).
#pragma once

#include <stdint.h>

#include <atomic>

namespace kiln_plugin_common {

class ActivationRecord {
 public:
  // [setup-thread] at the end of a successful activate.
  void publish(int32_t device, uint32_t max_batch) noexcept {
    device_.store(device, std::memory_order_relaxed);
    max_batch_.store(max_batch, std::memory_order_relaxed);
    is_active_.store(true, std::memory_order_release);
  }
  void set_device_bytes(uint64_t bytes) noexcept { device_bytes_.store(bytes, std::memory_order_relaxed); }
  void set_host_bytes(uint64_t bytes) noexcept { host_bytes_.store(bytes, std::memory_order_relaxed); }

  // [setup-thread] deactivate: nothing active, nothing reserved.
  void clear() noexcept {
    device_.store(-1, std::memory_order_relaxed);
    max_batch_.store(0, std::memory_order_relaxed);
    device_bytes_.store(0, std::memory_order_relaxed);
    host_bytes_.store(0, std::memory_order_relaxed);
    is_active_.store(false, std::memory_order_release);
  }

  // [any thread] The activation fields of a kiln_ik_info / kiln_trajopt_info (same names in both).
  template <class Info>
  void report(Info &info) const noexcept {
    const bool on = is_active_.load(std::memory_order_acquire);
    info.active = on ? 1u : 0u;
    info.max_batch = on ? max_batch_.load(std::memory_order_relaxed) : 0u;
    info.device_ordinal = on ? device_.load(std::memory_order_relaxed) : -1;
    info.device_bytes = device_bytes_.load(std::memory_order_relaxed);
    info.host_bytes = host_bytes_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<bool> is_active_{false};
  std::atomic<int32_t> device_{-1};
  std::atomic<uint32_t> max_batch_{0};
  std::atomic<uint64_t> device_bytes_{0};
  std::atomic<uint64_t> host_bytes_{0};
};

}  // namespace kiln_plugin_common
