// kiln TrajOpt plugin: the instance behind kiln.trajopt/1 and kiln.selftest/1: argument checks,
// buffers, the host path of activate(-1), the warm-start slots and their snapshot, export_state /
// import_state, the self-test. Plain C++: what touches a GPU is the Device policy:
//   module/trajopt_plugin.cu       CudaDevice: the CUDA runtime and the two kernels linked in;
//   module/trajopt_host_plugin.cpp NoDevice: a host-only build (no CUDA), activate(d >= 0) refused.
// A Device offers (each returning KILN_OK or a status with the message set):
//   open(ordinal, bytes, &device_block, &pinned_block, message)  [setup-thread] select the device,
//       check the kernels, make a stream and an event, reserve and clear both blocks;
//   select, to_device, to_host, launch_seeds(params, blocks, stream), launch_finalize(params,
//   blocks, stream), synchronize, record, wait_event, finished, stream, describe, close.
#pragma once

#include <stdint.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "kiln/ext/selftest.h"
#include "kiln/ext/trajopt.h"
#include "kiln/plugin.hpp"
#include "kiln_activation_record.hpp"
#include "kiln_slot_snapshot.hpp"
#include "kiln_solve_in_flight.hpp"
#include "trajopt_host.hpp"
#include "trajopt_inputs.hpp"
#include "trajopt_layout.hpp"
#include "trajopt_selftest.hpp"
#include "trajopt_state.hpp"

namespace kiln_trajopt {

constexpr uint32_t kMaxBatchLimit = 1u << 20;
const char *const kChainTag = KILN_PLUGIN_STRINGIFY(KILN_FK_CHAIN_TAG);

template <class Device>
class TrajoptSolver final : public kiln::plugin::Instance {
 public:
  explicit TrajoptSolver(const kiln_host_services *host) : Instance(host), gpu_(host), limits_(chain_limits()) {}
  ~TrajoptSolver() override { release(); }

  kiln_status activate(const kiln_activate_params &params, kiln::plugin::Message &message) override {
    if (params.max_batch > kMaxBatchLimit) {
      message.format("activate: max_batch = %u exceeds the solver's limit of %u problems", params.max_batch, kMaxBatchLimit);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    device_ = params.device_ordinal;
    max_batch_ = params.max_batch;
    const uint32_t slots = max_batch_ > 0 ? max_batch_ : 1u;
    snapshot_.reset(max_batch_, identity().words());
    if (device_ < 0) {
      const Layout layout(slots, 1, true);
      host_block_.reset(new unsigned char[layout.total()]());
      host_ = layout.carve(host_block_.get());
      activation_.set_host_bytes(layout.total());
      activation_.publish(device_, max_batch_);
      return KILN_OK;
    }
    const Layout layout(slots, size_t{slots} * KILN_TRAJOPT_MAX_SEEDS, false);
    const Layout staging(slots, 0, false);
    unsigned char *device_block = nullptr, *pinned = nullptr;
    on_device_ = true;  // from here release() closes gpu_, which frees whatever open got to
    kiln_status status = gpu_.open(device_, layout.total(), staging.total(), &device_block, &pinned, message);
    if (status != KILN_OK) return status;
    device_arrays_ = layout.carve(device_block);
    host_ = staging.carve(pinned);
    activation_.set_device_bytes(layout.total());
    activation_.set_host_bytes(staging.total());
    activation_.publish(device_, max_batch_);
    char kernel[320], text[512];
    gpu_.describe(kernel, sizeof kernel);
    std::snprintf(text, sizeof text, "kiln.trajopt %s N=%d: active on device %d, max_batch %u, %zu bytes of device memory, %s",
                  Dyn::kRobot, kN, device_, max_batch_, layout.total(), kernel);
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

  kiln_status export_state(void *buffer, size_t capacity, size_t *size, kiln::plugin::Message &message) const override {
    return state::write_blob(identity(), snapshot_, buffer, capacity, size, message);
  }

  kiln_status import_state(const void *blob, size_t size, kiln::plugin::Message &message) override {
    kiln_status status = kiln_plugin_common::require_idle(
        active(), in_flight_, "import_state", "the state lives in what activate reserves, so activate first", message);
    if (status != KILN_OK) return status;
    // Into a scratch copy first: a refused blob changes nothing.
    std::unique_ptr<float[]> q(new float[size_t{max_batch_} * kVars + 1]);
    std::unique_ptr<uint8_t[]> valid(new uint8_t[max_batch_ + 1]);
    status = state::read_blob(identity(), max_batch_, blob, size, q.get(), valid.get(), message);
    if (status != KILN_OK) return status;
    std::memcpy(host_.warm_q, q.get(), size_t{max_batch_} * kVars * sizeof(float));
    std::memcpy(host_.warm_valid, valid.get(), max_batch_);
    if (device_ >= 0 &&
        (status = kiln_plugin_common::upload_warm_slots(gpu_, device_arrays_.warm_q, device_arrays_.warm_valid,
                                                        host_.warm_q, host_.warm_valid, max_batch_, kVars, message)) !=
            KILN_OK)
      return status;
    snapshot_.publish(host_.warm_q, host_.warm_valid, max_batch_);
    return KILN_OK;
  }

  kiln_status selftest(kiln::plugin::Message &message) {
    if (!active() || in_flight_) {
      message.set(in_flight_ ? "selftest: a solve is in flight; call wait() first" : "selftest: the instance is not active");
      return KILN_ERR_STATE;
    }
    const auto solve = [this](const kiln_trajopt_problem &problem, const kiln_trajopt_result &result,
                              kiln::plugin::Message &text) {
      const kiln_status status = solve_async(&problem, &result, text, /*record=*/false);
      return status != KILN_OK ? status : wait(text);
    };
    return selftest::run(max_batch_, solve, message);
  }

  kiln_status info(kiln_trajopt_info *out) const noexcept {
    if (out == nullptr || out->struct_size == 0) return KILN_ERR_INVALID_ARGUMENT;
    kiln_trajopt_info full{};
    full.struct_size = out->struct_size;
    full.dof = kDof;
    full.horizon = kN;
    full.max_seeds = KILN_TRAJOPT_MAX_SEEDS;
    activation_.report(full);
    full.solve_flags = KILN_TRAJOPT_SOLVE_WARM_START;
    copy_name(full.robot, Dyn::kRobot);
    copy_name(full.base_link, Dyn::kBaseLink);
    copy_name(full.tip_link, Dyn::kTipLink);
    copy_name(full.source, Dyn::kSource);
    std::memcpy(out, &full, out->struct_size < sizeof full ? out->struct_size : sizeof full);
    return KILN_OK;
  }

  // record: the solve updates the slots' last solutions (every caller's solve; not the self-test's).
  kiln_status solve_async(const kiln_trajopt_problem *problem, const kiln_trajopt_result *result,
                          kiln::plugin::Message &message, bool record = true) noexcept {
    kiln_status status =
        kiln_plugin_common::require_idle(active(), in_flight_, "solve", "call activate first", message);
    if (status != KILN_OK) return status;
    KernelParams p{};
    status = inputs::check(problem, result, max_batch_, device_ < 0, &p.settings, message);
    if (status != KILN_OK || problem->count == 0) return status;
    const bool device_memory = problem->memory == KILN_TRAJOPT_MEMORY_DEVICE;
    const uint32_t count = problem->count;
    p.count = count;
    p.seeds = p.settings.seeds;
    p.limits = limits_;
    const Arrays &slots = device_ < 0 ? host_ : device_arrays_;
    p.warm_q = record ? slots.warm_q : nullptr;
    p.warm_valid = record ? slots.warm_valid : nullptr;
    p.warm_start = record && (p.settings.flags & KILN_TRAJOPT_SOLVE_WARM_START) != 0 ? 1u : 0u;
    inputs::point_at_caller(*problem, *result, &p);
    if (device_ < 0) {  // the caller's buffers directly: the solve finishes before this returns
      p.scratch = host_.scratch;
      solve_host(p, host_.scratch, host_.band, host_.best);
      if (record) snapshot_.publish(host_.warm_q, host_.warm_valid, count);
    } else {
      if ((status = enqueue(p, *problem, *result, device_memory, record, message)) != KILN_OK) return status;
    }
    in_flight_ = true;
    pending_record_ = record && device_ >= 0;
    pending_copy_ = device_ >= 0 && !device_memory;
    pending_count_ = count;
    pending_ = *result;
    return KILN_OK;
  }

  int32_t poll() noexcept {
    if (!in_flight_) return KILN_TRAJOPT_IDLE;
    if (device_ < 0) return KILN_TRAJOPT_DONE;
    return gpu_.finished() ? KILN_TRAJOPT_DONE : KILN_TRAJOPT_RUNNING;
  }

  kiln_status wait(kiln::plugin::Message &message) noexcept {
    if (!in_flight_) return KILN_OK;
    in_flight_ = false;
    if (device_ >= 0) {
      const kiln_status status = kiln_plugin_common::wait_on_device(gpu_, message);
      if (status != KILN_OK) return status;
    }
    if (pending_record_) snapshot_.publish(host_.warm_q, host_.warm_valid, pending_count_);
    if (pending_copy_) inputs::copy_outputs(host_, pending_, pending_count_);
    return KILN_OK;
  }

  static const kiln_trajopt_v1 table;
  static const kiln_selftest_v1 selftest_table;

 private:
  static state::Identity identity() noexcept { return {static_cast<uint32_t>(kDof), static_cast<uint32_t>(kN), kChainTag, Dyn::kRobot}; }

  // [control-thread] copies up (host memory), the two kernels, copies back, the event.
  kiln_status enqueue(KernelParams &p, const kiln_trajopt_problem &problem, const kiln_trajopt_result &result, bool device_memory, bool record,
                      kiln::plugin::Message &message) noexcept {
    void *stream = problem.stream != nullptr ? problem.stream : gpu_.stream();
    const Arrays &d = device_arrays_;
    kiln_status s = gpu_.select("solve: selecting the device", message);
    if (s != KILN_OK) return s;
    if (!device_memory && (s = inputs::stage_and_upload(gpu_, problem, host_, d, stream, &p, message)) != KILN_OK) return s;
    if (!device_memory) inputs::point_at(d, problem, &p);
    p.scratch = d.scratch;
    p.summaries = d.summaries;
    p.done = d.done;
    // Seed 0 of every problem, then the other seeds where it did not converge (their blocks return at once
    // elsewhere), then the best of each problem.
    p.seed_base = 0, p.seed_span = 1;
    if ((s = gpu_.launch_seeds(p, p.count, stream, "solve: launching the seed kernel", message)) != KILN_OK) return s;
    if (p.seeds > 1) {
      p.seed_base = 1, p.seed_span = p.seeds - 1;
      if ((s = gpu_.launch_seeds(p, p.count * p.seed_span, stream, "solve: launching the seed kernel", message)) != KILN_OK)
        return s;
    }
    if ((s = gpu_.launch_finalize(p, p.count, stream, "solve: launching the finalize kernel", message)) != KILN_OK) return s;
    if (!device_memory && (s = inputs::download(gpu_, d, host_, problem, stream, message, &result)) != KILN_OK) return s;
    if (record && (s = kiln_plugin_common::download_warm_slots(gpu_, host_.warm_q, host_.warm_valid, d.warm_q,
                                                               d.warm_valid, p.count, kVars, stream, message)) !=
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
  const Limits limits_;
  int32_t device_ = -1;
  uint32_t max_batch_ = 0;
  bool on_device_ = false;
  std::unique_ptr<unsigned char[]> host_block_;
  Arrays device_arrays_;
  Arrays host_;  // staging: pinned (device) or host_block_ (host only)
  kiln_plugin_common::SlotSnapshot snapshot_;

  bool in_flight_ = false;
  bool pending_record_ = false;
  bool pending_copy_ = false;
  uint32_t pending_count_ = 0;
  kiln_trajopt_result pending_{};

  kiln_plugin_common::ActivationRecord activation_;  // what info() reports from any thread
};

}  // namespace kiln_trajopt

#include "trajopt_tables.hpp"
