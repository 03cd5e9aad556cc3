// kiln plugins: the steps around a solve in flight that kiln.ik and kiln.trajopt take alike, over
// the plugin's Device policy (select, wait_event, to_device, to_host, synchronize, stream; see
// ik_solver.hpp / trajopt_solver.hpp). What a plugin finishes after them (its results, its copies)
// stays in the plugin. Plain C++: the Device is what touches a GPU.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kiln/plugin.hpp"

namespace kiln_plugin_common {

// A call that needs an active instance and no solve in flight: KILN_OK, or KILN_ERR_STATE with
// "<call>: the instance is not active; <not_active_hint>" or "<call>: a solve is in flight ...".
inline kiln_status require_idle(bool active, bool in_flight, const char *call, const char *not_active_hint,
                                kiln::plugin::Message &message) noexcept {
  if (!active) {
    message.format("%s: the instance is not active; %s", call, not_active_hint);
    return KILN_ERR_STATE;
  }
  if (in_flight) {
    message.format("%s: a solve is in flight on this instance; call wait() first", call);
    return KILN_ERR_STATE;
  }
  return KILN_OK;
}

// [control-thread] wait() on a device: blocks until the solve's event, reporting a failed solve.
template <class Device>
kiln_status wait_on_device(Device &gpu, kiln::plugin::Message &message) noexcept {
  kiln_status status = gpu.select("wait: selecting the device", message);
  return status != KILN_OK ? status : gpu.wait_event(message);
}

// [setup-thread] release with a solve in flight: a solve on a caller's stream may still use the
// instance's buffers, so wait for it before they are freed; its outcome no longer matters.
template <class Device>
void drain_on_device(Device &gpu) noexcept {
  char scratch[8];
  kiln::plugin::Message ignored(scratch, sizeof scratch);
  gpu.select("release", ignored);
  gpu.wait_event(ignored);
}

// [setup-thread] import_state on a device: the staged warm slots (slots slots of floats_per_slot
// floats and a flag each) up to the device's, synchronously on the instance's stream.
template <class Device>
kiln_status upload_warm_slots(Device &gpu, float *device_q, uint8_t *device_valid, const float *host_q,
                              const uint8_t *host_valid, uint32_t slots, size_t floats_per_slot,
                              kiln::plugin::Message &message) {
  const char *what = "import_state: copying the state to the device";
  kiln_status status = KILN_OK;
  if ((status = gpu.select("import_state: selecting the device", message)) != KILN_OK ||
      (status = gpu.to_device(device_q, host_q, size_t{slots} * floats_per_slot * sizeof(float), gpu.stream(), what,
                              message)) != KILN_OK ||
      (status = gpu.to_device(device_valid, host_valid, slots, gpu.stream(), what, message)) != KILN_OK ||
      (status = gpu.synchronize(gpu.stream(), what, message)) != KILN_OK)
    return status;
  return KILN_OK;
}

// A copy costs a batch-1 solve a few microseconds whatever its size (a controller's IK solve is
// about 40 us on an H100): arrays that lie in the same order and at the same distances in the
// device reservation and in the staging move in one copy of the span they cover when it is at
// most this many bytes (a batch-1 instance's), the bytes between them included.
constexpr size_t kOneCopyBytes = 16384;

// The span [first, end) of both reservations when it may move in one copy (equal in both, at
// most kOneCopyBytes), else 0.
inline size_t one_copy_span(const void *device_first, const void *device_end, const void *host_first,
                            const void *host_end) noexcept {
  const auto bytes = [](const void *first, const void *end) {
    return static_cast<size_t>(static_cast<const unsigned char *>(end) - static_cast<const unsigned char *>(first));
  };
  const size_t span = bytes(device_first, device_end);
  return device_end > device_first && span == bytes(host_first, host_end) && span <= kOneCopyBytes ? span : 0;
}

// [control-thread: real-time safe] A recording solve on a device: the first count warm slots back
// to the staging copy on stream, for wait() to publish to the snapshot.
template <class Device>
kiln_status download_warm_slots(Device &gpu, float *host_q, uint8_t *host_valid, const float *device_q,
                                const uint8_t *device_valid, uint32_t count, size_t floats_per_slot, void *stream,
                                kiln::plugin::Message &message) noexcept {
  const char *what = "solve: copying the slots' solutions back";
  if (const size_t span = one_copy_span(device_q, device_valid + count, host_q, host_valid + count))
    return gpu.to_host(host_q, device_q, span, stream, what, message);
  kiln_status status = KILN_OK;
  if ((status = gpu.to_host(host_q, device_q, size_t{count} * floats_per_slot * sizeof(float), stream, what,
                            message)) != KILN_OK ||
      (status = gpu.to_host(host_valid, device_valid, count, stream, what, message)) != KILN_OK)
    return status;
  return KILN_OK;
}

}  // namespace kiln_plugin_common
