// kiln IK plugin: the instance both forms share (kiln.ik/1 and kiln.selftest/1 behind it): argument
// checks, buffers and their layout, the host path of activate(-1), the warm-start slots and their
// snapshot, export_state / import_state, the self-test. Plain C++: what touches a GPU is the Device
// policy, one per form:
//   ik_plugin.cu        CudaRuntimeDevice: the CUDA runtime, the kernel linked in (nvcc form);
//   ik_split_plugin.cpp DriverDevice: driver entry points and the NVRTC kernel, both from the host
//                       through kiln.host.kernels/1 (split form, no CUDA library linked).
//
// A Device (constructed from the host services) offers, each returning KILN_OK or a status with
// the message set as "<what> failed on device <d>: <error name> (<code>): <text>":
//   open(ordinal, bytes, &device_block, &pinned_block, message)   [setup-thread] select the device,
//       load and check the kernel, make a stream and an event, reserve both blocks, clear the
//       device block (on the stream);
//   select(what, message)                       make the device current on this thread;
//   to_device / to_host(dst, src, bytes, stream, what, message)   async copies on stream;
//   launch(params, blocks, stream, what, message)                 one solve kernel launch;
//   synchronize(stream, what, message), record(stream, message), wait_event(message);
//   finished()      whether the event recorded last completed (or failed);
//   stream()        its own stream (a CUstream / cudaStream_t as void *);
//   describe(text, size)   a line about the kernel (registers, local memory) for the log;
//   close()         [setup-thread] wait for the stream, then free everything open took; noexcept.
// Real-time calls (to_device, to_host, launch, record, finished, select) allocate nothing.
#pragma once

#include <stdint.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "ik_batch_host.hpp"
#include "ik_layout.hpp"
#include "ik_params.hpp"
#include "ik_selftest.hpp"
#include "ik_state.hpp"
#include "kiln/ext/ik.h"
#include "kiln/ext/selftest.h"
#include "kiln/plugin.hpp"
#include "kiln_activation_record.hpp"
#include "kiln_slot_snapshot.hpp"
#include "kiln_solve_in_flight.hpp"

#ifndef KILN_IK_MAX_ITERATIONS_CAP
#define KILN_IK_MAX_ITERATIONS_CAP 0u  // none
#endif

namespace {

constexpr uint32_t kMaxBatchLimit = 1u << 26;  // keeps (target, seed) thread indices in 32 bits
constexpr uint32_t kIterationCap = KILN_IK_MAX_ITERATIONS_CAP;
const char *const kChainTag = KILN_PLUGIN_STRINGIFY(KILN_FK_CHAIN_TAG);

template <class Device>
class IkSolver final : public kiln::plugin::Instance {
 public:
  explicit IkSolver(const kiln_host_services *host) : Instance(host), gpu_(host), limits_(float_limits()) {}
  ~IkSolver() override { release(); }

  kiln_status activate(const kiln_activate_params &params, kiln::plugin::Message &message) override {
    if (params.max_batch > kMaxBatchLimit) {
      message.format("activate: max_batch = %u exceeds the solver's limit of %u targets", params.max_batch,
                     kMaxBatchLimit);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    device_ = params.device_ordinal;
    max_batch_ = params.max_batch;
    const Layout layout(max_batch_ > 0 ? max_batch_ : 1u);
    snapshot_.reset(max_batch_, kiln_ik::state::words_per_slot(kDof));  // every slot empty
    if (device_ < 0) {
      host_block_.reset(new unsigned char[layout.total]());
      host_ = Arrays::carve(host_block_.get(), layout);
      activation_.set_host_bytes(layout.total);
      activation_.publish(device_, max_batch_);
      return KILN_OK;
    }
    unsigned char *device_block = nullptr, *pinned = nullptr;
    on_device_ = true;  // from here release() closes gpu_, which frees whatever open got to
    kiln_status status = gpu_.open(device_, layout.total, &device_block, &pinned, message);
    if (status != KILN_OK) return status;
    device_arrays_ = Arrays::carve(device_block, layout);
    host_ = Arrays::carve(pinned, layout);
    std::memset(pinned, 0, layout.total);
    // Warm up: one empty launch, so that module loading and first-launch work happen here.
    KernelParams warm{};
    warm.seeds = 1;
    warm.settings.max_iterations = 1;
    warm.limits = limits_;
    warm.targets = device_arrays_.targets;
    warm.q = device_arrays_.q;
    if ((status = gpu_.launch(warm, 1, gpu_.stream(), "activate: launching the IK kernel", message)) != KILN_OK ||
        (status = gpu_.synchronize(gpu_.stream(), "activate: running the IK kernel", message)) != KILN_OK)
      return status;
    activation_.set_device_bytes(layout.total);
    activation_.set_host_bytes(layout.total);
    activation_.publish(device_, max_batch_);
    char kernel[320];
    gpu_.describe(kernel, sizeof kernel);
    char text[512];
    std::snprintf(text, sizeof text, "kiln.ik %s: active on device %d, max_batch %u, %zu bytes of device memory, %s",
                  Chain::kRobot, device_, max_batch_, layout.total, kernel);
    log(KILN_LOG_INFO, text);
    return KILN_OK;
  }

  void deactivate() noexcept override {
    release();
    device_ = -1;
    max_batch_ = 0;
    activation_.clear();
  }

  const void *get_interface(const char *interface_id) const noexcept override;

  // [setup-thread] The slots as the last completed solve left them; may run while the control
  // thread keeps solving (ik.h, "Warm start"). Not active: a blob of 0 slots.
  kiln_status export_state(void *buffer, size_t capacity, size_t *size,
                           kiln::plugin::Message &message) const override {
    return kiln_ik::state::write_blob(identity(), snapshot_, buffer, capacity, size, message);
  }

  // [setup-thread] Replaces every slot (those past the blob's empty); no real-time call may run.
  // A refused blob changes nothing.
  kiln_status import_state(const void *blob, size_t size, kiln::plugin::Message &message) override {
    kiln_status status = kiln_plugin_common::require_idle(
        active(), in_flight_, "import_state", "the state lives in what activate reserves, so activate first", message);
    if (status != KILN_OK) return status;
    kiln_ik::state::Parsed parsed;
    status = kiln_ik::state::parse_blob(identity(), max_batch_, blob, size, &parsed, message);
    if (status != KILN_OK) return status;
    // Host only, host_ holds the state itself; on a device it is the staging copy sent up.
    kiln_ik::state::unpack(parsed, kDof, max_batch_, host_.warm_q, host_.warm_valid);
    if (device_ >= 0 &&
        (status = kiln_plugin_common::upload_warm_slots(gpu_, device_arrays_.warm_q, device_arrays_.warm_valid,
                                                        host_.warm_q, host_.warm_valid, max_batch_, kDof, message)) !=
            KILN_OK)
      return status;
    snapshot_.publish(host_.warm_q, host_.warm_valid, max_batch_);
    return KILN_OK;
  }

  // [setup-thread] kiln.selftest/1: ik_selftest.hpp through solve_async + wait, recording nothing.
  kiln_status selftest(kiln::plugin::Message &message) {
    const kiln_status idle =
        kiln_plugin_common::require_idle(active(), in_flight_, "selftest", "call activate first", message);
    if (idle != KILN_OK) return idle;
    const auto solve = [this](const kiln_ik_problem &problem, const kiln_ik_result &result,
                              kiln::plugin::Message &text) {
      const kiln_status status = solve_async(&problem, &result, text, /*record=*/false);
      return status != KILN_OK ? status : wait(text);
    };
    return kiln_ik::selftest::run<Chain>(max_batch_, kiln_ik::Settings{}, solve, message);
  }

  kiln_status info(kiln_ik_info *out) const noexcept {
    if (out == nullptr || out->struct_size == 0) return KILN_ERR_INVALID_ARGUMENT;
    kiln_ik_info full{};
    full.struct_size = out->struct_size;
    full.dof = kDof;
    full.max_seeds = KILN_IK_MAX_SEEDS;
    activation_.report(full);
    copy_name(full.robot, Chain::kRobot);
    copy_name(full.base_link, Chain::kBaseLink);
    copy_name(full.tip_link, Chain::kTipLink);
    copy_name(full.source, Chain::kSource);
    full.solve_flags = kiln_ik::kSolveFlags;
    std::memcpy(out, &full, out->struct_size < sizeof full ? out->struct_size : sizeof full);
    return KILN_OK;
  }

  // record: the solve updates the slots' last solutions (every caller's solve; not the self-test's).
  kiln_status solve_async(const kiln_ik_problem *problem, const kiln_ik_result *result,
                          kiln::plugin::Message &message, bool record = true) noexcept {
    const kiln_status idle =
        kiln_plugin_common::require_idle(active(), in_flight_, "solve", "call activate first", message);
    if (idle != KILN_OK) return idle;
    if (problem == nullptr || problem->struct_size < sizeof(kiln_ik_problem)) {
      message.set("solve: problem is NULL or its struct_size is smaller than kiln_ik_problem of kiln.ik/1");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (result == nullptr || result->struct_size < sizeof(kiln_ik_result)) {
      message.set("solve: result is NULL or its struct_size is smaller than kiln_ik_result of kiln.ik/1");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    KernelParams p{};
    if (const char *bad = kiln_ik::resolve_settings(problem->options, &p.settings)) {
      message.format("solve: %s", bad);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (kIterationCap > 0 && p.settings.max_iterations > kIterationCap) p.settings.max_iterations = kIterationCap;
    const uint32_t count = problem->count;
    if (count > max_batch_) {
      message.format("solve: count = %u exceeds max_batch = %u reserved at activate", count, max_batch_);
      return KILN_ERR_CAPACITY;
    }
    if (problem->memory != KILN_IK_MEMORY_HOST && problem->memory != KILN_IK_MEMORY_DEVICE) {
      message.format("solve: problem->memory = %d is neither KILN_IK_MEMORY_HOST (0) nor KILN_IK_MEMORY_DEVICE (1)",
                     static_cast<int>(problem->memory));
      return KILN_ERR_INVALID_ARGUMENT;
    }
    const bool device_memory = problem->memory == KILN_IK_MEMORY_DEVICE;
    if (device_memory && device_ < 0) {
      message.set("solve: KILN_IK_MEMORY_DEVICE on an instance activated host only (device_ordinal -1)");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (count == 0) return KILN_OK;
    if (problem->targets == nullptr || result->q == nullptr) {
      message.set("solve: problem->targets and result->q must not be NULL");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    p.count = count;
    p.seeds = p.settings.seeds;
    p.group_shift = group_shift_for(p.seeds);
    p.limits = limits_;
    const Arrays &warm = device_ < 0 ? host_ : device_arrays_;
    p.warm_q = record ? warm.warm_q : nullptr;
    p.warm_valid = record ? warm.warm_valid : nullptr;
    p.warm_start = record && (p.settings.flags & KILN_IK_SOLVE_WARM_START) != 0;

    if (device_memory) {
      p.targets = problem->targets;
      p.initial_q = problem->initial_q;
      p.q = result->q;
      p.position_error = result->position_error;
      p.orientation_error = result->orientation_error;
      p.converged = result->converged;
      p.iterations = result->iterations;
    } else {
      for (uint32_t i = 0; i < count; ++i) {
        const float *pose = problem->targets + size_t{i} * KILN_IK_POSE_SIZE;
        kiln_ik::Target<float> goal;
        if (!kiln_ik::make_target(pose, goal)) {
          message.format("solve: target %u is not a pose (a value is not finite or its quaternion is zero)", i);
          return KILN_ERR_INVALID_ARGUMENT;
        }
      }
      std::memcpy(host_.targets, problem->targets, size_t{count} * KILN_IK_POSE_SIZE * sizeof(float));
      if (problem->initial_q != nullptr) {
        std::memcpy(host_.initial_q, problem->initial_q, size_t{count} * kDof * sizeof(float));
      }
    }

    if (device_ < 0) {
      p.targets = host_.targets;
      p.initial_q = problem->initial_q != nullptr ? host_.initial_q : nullptr;
      p.q = host_.q;
      p.position_error = host_.position_error;
      p.orientation_error = host_.orientation_error;
      p.converged = host_.converged;
      p.iterations = host_.iterations;
      solve_host(p);
      if (record) snapshot_.publish(host_.warm_q, host_.warm_valid, count);
    } else {
      const kiln_status status = enqueue(p, *problem, device_memory, record, message);
      if (status != KILN_OK) return status;
    }
    in_flight_ = true;
    pending_record_ = record && device_ >= 0;  // host only, published above
    pending_device_memory_ = device_memory;
    pending_count_ = count;
    pending_ = *result;
    return KILN_OK;
  }

  int32_t poll() noexcept {
    if (!in_flight_) return KILN_IK_IDLE;
    if (device_ < 0) return KILN_IK_DONE;
    // Finished, or failed: either way wait() no longer blocks (and reports a failure).
    return gpu_.finished() ? KILN_IK_DONE : KILN_IK_RUNNING;
  }

  kiln_status wait(kiln::plugin::Message &message) noexcept {
    if (!in_flight_) return KILN_OK;
    in_flight_ = false;
    if (device_ >= 0) {
      const kiln_status status = kiln_plugin_common::wait_on_device(gpu_, message);
      if (status != KILN_OK) return status;
    }
    if (pending_record_) snapshot_.publish(host_.warm_q, host_.warm_valid, pending_count_);
    if (pending_device_memory_) return KILN_OK;
    const size_t n = pending_count_;
    std::memcpy(pending_.q, host_.q, n * kDof * sizeof(float));
    if (pending_.position_error != nullptr) std::memcpy(pending_.position_error, host_.position_error, n * sizeof(float));
    if (pending_.orientation_error != nullptr)
      std::memcpy(pending_.orientation_error, host_.orientation_error, n * sizeof(float));
    if (pending_.converged != nullptr) std::memcpy(pending_.converged, host_.converged, n);
    if (pending_.iterations != nullptr) std::memcpy(pending_.iterations, host_.iterations, n * sizeof(uint32_t));
    return KILN_OK;
  }

  static const kiln_ik_v1 table;
  static const kiln_selftest_v1 selftest_table;

 private:
  static kiln_ik::state::Identity identity() noexcept { return {static_cast<uint32_t>(kDof), kChainTag, Chain::kRobot}; }

  // [control-thread] Copies up (host memory), one kernel, copies back, the event: all on stream.
  kiln_status enqueue(KernelParams &p, const kiln_ik_problem &problem, bool device_memory, bool record,
                      kiln::plugin::Message &message) noexcept {
    void *stream = problem.stream != nullptr ? problem.stream : gpu_.stream();
    const size_t count = p.count;
    const Arrays &d = device_arrays_;
    kiln_status s = gpu_.select("solve: selecting the device", message);
    if (s != KILN_OK) return s;
    if (!device_memory) {
      if ((s = gpu_.to_device(d.targets, host_.targets, count * KILN_IK_POSE_SIZE * sizeof(float), stream,
                              "solve: copying the targets to the device", message)) != KILN_OK)
        return s;
      if (problem.initial_q != nullptr &&
          (s = gpu_.to_device(d.initial_q, host_.initial_q, count * kDof * sizeof(float), stream,
                              "solve: copying initial_q to the device", message)) != KILN_OK)
        return s;
      p.targets = d.targets;
      p.initial_q = problem.initial_q != nullptr ? d.initial_q : nullptr;
      p.q = d.q;
      p.position_error = d.position_error;
      p.orientation_error = d.orientation_error;
      p.converged = d.converged;
      p.iterations = d.iterations;
    }
    const uint64_t threads = uint64_t{p.count} << p.group_shift;
    const unsigned blocks = static_cast<unsigned>((threads + kBlock - 1) / kBlock);
    if ((s = gpu_.launch(p, blocks, stream, "solve: launching the IK kernel", message)) != KILN_OK) return s;
    if (!device_memory &&
        ((s = gpu_.to_host(host_.q, d.q, count * kDof * sizeof(float), stream, "solve: copying q back", message)) !=
             KILN_OK ||
         (s = gpu_.to_host(host_.position_error, d.position_error, count * sizeof(float), stream,
                           "solve: copying the position errors back", message)) != KILN_OK ||
         (s = gpu_.to_host(host_.orientation_error, d.orientation_error, count * sizeof(float), stream,
                           "solve: copying the orientation errors back", message)) != KILN_OK ||
         (s = gpu_.to_host(host_.converged, d.converged, count, stream, "solve: copying the converged flags back",
                           message)) != KILN_OK ||
         (s = gpu_.to_host(host_.iterations, d.iterations, count * sizeof(uint32_t), stream,
                           "solve: copying the iteration counts back", message)) != KILN_OK))
      return s;
    if (record && (s = kiln_plugin_common::download_warm_slots(gpu_, host_.warm_q, host_.warm_valid, d.warm_q,
                                                               d.warm_valid, p.count, kDof, stream, message)) !=
                      KILN_OK)
      return s;
    return gpu_.record(stream, message);
  }

  void release() noexcept {
    if (in_flight_ && on_device_) kiln_plugin_common::drain_on_device(gpu_);
    in_flight_ = false;
    snapshot_.clear();
    host_block_.reset();
    if (on_device_) gpu_.close();
    on_device_ = false;
    device_arrays_ = Arrays{};
    host_ = Arrays{};
  }

  Device gpu_;
  const FloatLimits limits_;
  int32_t device_ = -1;
  uint32_t max_batch_ = 0;
  bool on_device_ = false;  // gpu_.open was called: close() frees what it took
  std::unique_ptr<unsigned char[]> host_block_;  // host-only staging
  Arrays device_arrays_;
  Arrays host_;  // staging: pinned (device) or host_block_ (host only)

  // What export_state reads: the slots' last solutions, published after each recording solve.
  kiln_plugin_common::SlotSnapshot snapshot_;

  // The solve in flight.
  bool in_flight_ = false;
  bool pending_record_ = false;
  bool pending_device_memory_ = false;
  uint32_t pending_count_ = 0;
  kiln_ik_result pending_{};

  // What info() reports from any thread.
  kiln_plugin_common::ActivationRecord activation_;
};

}  // namespace

#include "ik_tables.hpp"
