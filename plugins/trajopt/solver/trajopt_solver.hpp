// kiln TrajOpt plugin: the instance behind kiln.trajopt/1 and kiln.selftest/1, on the plugin kit's
// SolverInstance (plugins/common/kiln_solver_instance.hpp: lifecycle, solve in flight, warm-start
// slots, state blob, self-test frame). What is TrajOpt's own is here and in trajopt_inputs.hpp:
// the problems' checks, the buffers' layout, the two kernels' launches, the state header. Plain
// C++: what touches a GPU is the Device policy:
//   module/trajopt_plugin.cu       CudaDevice: the CUDA runtime and the two kernels linked in;
//   module/trajopt_host_plugin.cpp NoDevice: a host-only build (no CUDA), activate(d >= 0) refused.
// A Device offers (each returning KILN_OK or a status with the message set):
//   open(ordinal, bytes, &device_block, &pinned_block, message)  [setup-thread] select the device,
//       check the kernels, make a stream and an event, reserve and clear both blocks;
//   select, to_device, to_host, launch_seeds(params, blocks, stream), launch_finalize(params,
//   blocks, stream), synchronize, record, wait_event, finished, stream, describe, close.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "kiln/ext/selftest.h"
#include "kiln/ext/trajopt.h"
#include "kiln/plugin.hpp"
#include "kiln_robotmodel.hpp"
#include "kiln_solver_instance.hpp"
#include "trajopt_host.hpp"
#include "trajopt_inputs.hpp"
#include "trajopt_layout.hpp"
#include "trajopt_selftest.hpp"
#include "trajopt_state.hpp"

namespace kiln_trajopt {

// kiln.trajopt/1 as the kit's SolverInstance sees it.
struct TrajoptKind : kiln_plugin_common::SolverTypes<KernelParams, Arrays, Limits, Dyn,
                                                     kiln_plugin_common::robotmodel::Model<Fk, Dyn>> {
  KILN_SOLVER_KIND(trajopt, TRAJOPT);
  static constexpr const char *kBatchItems = "problems";
  static constexpr uint32_t kMaxBatch = 1u << 20;
  static constexpr size_t kSlotFloats = kVars;  // the trajectory q_1..q_N
  // Revision 1.0's structs: they ended before the tracking inputs and within_limits.
  static constexpr size_t kProblemMinSize = offsetof(kiln_trajopt_problem, track_poses);
  static constexpr size_t kResultMinSize = offsetof(kiln_trajopt_result, within_limits);
};

template <class Device>
class TrajoptSolver final : public kiln_plugin_common::SolverInstance<TrajoptSolver<Device>, Device, TrajoptKind> {
  friend class kiln_plugin_common::SolverInstance<TrajoptSolver, Device, TrajoptKind>;

 public:
  explicit TrajoptSolver(const kiln_host_services *host) : TrajoptSolver::SolverInstance(host, chain_limits()) {}

  static const kiln_trajopt_v1 table;

 private:
  static state::Identity identity() noexcept { return {TrajoptSolver::chain_identity(), static_cast<uint32_t>(kN)}; }

  // activate: host only, one seed's scratch and the band; on a device, every (problem, seed)'s
  // scratch in device memory and the inputs and outputs in pinned staging.
  static size_t host_bytes(uint32_t slots) { return Layout(slots, 1, true).total(); }
  static Arrays carve_host(unsigned char *block, uint32_t slots) { return Layout(slots, 1, true).carve(block); }

  kiln_status open_device(uint32_t slots, size_t *device_bytes, size_t *host_bytes,
                          kiln::plugin::Message &message) noexcept {
    const Layout layout(slots, size_t{slots} * KILN_TRAJOPT_MAX_SEEDS, false);
    const Layout staging(slots, 0, false);
    unsigned char *device_block = nullptr, *pinned = nullptr;
    const kiln_status status =
        this->gpu_.open(this->device_, layout.total(), staging.total(), &device_block, &pinned, message);
    if (status != KILN_OK) return status;
    this->device_arrays_ = layout.carve(device_block);
    this->host_ = staging.carve(pinned);
    *device_bytes = layout.total();
    *host_bytes = staging.total();
    return KILN_OK;
  }

  void describe_active(char *text, size_t size, size_t device_bytes, const char *kernel) const noexcept {
    std::snprintf(text, size, "kiln.trajopt %s N=%d: active on device %d, max_batch %u, %zu bytes of device memory, %s",
                  Dyn::kRobot, kN, this->device_, this->max_batch_, device_bytes, kernel);
  }

  static void fill_info(kiln_trajopt_info &info) noexcept {
    info.horizon = kN;
    info.max_seeds = KILN_TRAJOPT_MAX_SEEDS;
    info.solve_flags = KILN_TRAJOPT_SOLVE_WARM_START | KILN_TRAJOPT_SOLVE_WARM_SHIFT;
    info.features = KILN_TRAJOPT_FEATURE_TRACKING | KILN_TRAJOPT_FEATURE_WITHIN_LIMITS;
  }

  kiln_status write_state(const kiln_plugin_common::SlotSnapshot &snapshot, void *buffer, size_t capacity, size_t *size,
                          kiln::plugin::Message &message) const {
    return state::write_blob(identity(), snapshot, buffer, capacity, size, message);
  }

  // Into a scratch copy first: a refused blob changes nothing.
  kiln_status read_state(const void *blob, size_t size, float *q, uint8_t *valid, kiln::plugin::Message &message) {
    std::unique_ptr<float[]> scratch_q(new float[size_t{this->max_batch_} * kVars + 1]);
    std::unique_ptr<uint8_t[]> scratch_valid(new uint8_t[this->max_batch_ + 1]);
    const kiln_status status =
        state::read_blob(identity(), this->max_batch_, blob, size, scratch_q.get(), scratch_valid.get(), message);
    if (status != KILN_OK) return status;
    std::memcpy(q, scratch_q.get(), size_t{this->max_batch_} * kVars * sizeof(float));
    std::memcpy(valid, scratch_valid.get(), this->max_batch_);
    return KILN_OK;
  }

  template <class Solve>
  kiln_status run_selftest(Solve solve, kiln::plugin::Message &message) {
    return selftest::run(this->max_batch_, solve, message);
  }

  static const char *resolve(const kiln_trajopt_options *options, Settings *settings) {
    return inputs::resolve(options, settings);
  }
  static kiln_status check_inputs(const kiln_trajopt_problem &problem, const kiln_trajopt_result &result,
                                  bool device_memory, kiln::plugin::Message &message) {
    return inputs::check(&problem, &result, device_memory, message);
  }
  // The caller's buffers directly (host only, or device memory); enqueue_solve points host-memory
  // solves at the device arrays.
  static void prepare(KernelParams &p, const kiln_trajopt_problem &problem, const kiln_trajopt_result &result,
                      bool) noexcept {
    inputs::point_at_caller(problem, result, &p);
  }

  static constexpr bool kHostSolvesInPlace = true;
  void solve_on_host(KernelParams &p) noexcept {
    p.scratch = this->host_.scratch;
    solve_host(p, this->host_.scratch, this->host_.band, this->host_.best);
  }

  // [control-thread] Host-memory inputs into the staging, before the device work is enqueued (or a
  // captured graph of it replayed).
  void stage(const kiln_trajopt_problem &problem) noexcept { inputs::stage(problem, this->host_); }
  // What the device work of a host-memory solve depends on: p pointed at the device arrays, the
  // outputs the caller left out (not copied back) as nullptr. Equal keys enqueue equal work.
  void graph_key(KernelParams &key, const KernelParams &p, const kiln_trajopt_problem &problem,
                 const kiln_trajopt_result &r) const noexcept {
    std::memcpy(static_cast<void *>(&key), &p, sizeof p);  // the bytes, padding included
    inputs::point_at(this->device_arrays_, problem, &key);
    if (r.qd == nullptr) key.qd = nullptr;
    if (r.torques == nullptr) key.torques = nullptr;
    if (r.converged == nullptr) key.converged = nullptr;
    if (r.position_error == nullptr) key.position_error = nullptr;
    if (r.orientation_error == nullptr) key.orientation_error = nullptr;
    if (r.position_violation == nullptr) key.position_violation = nullptr;
    if (r.velocity_violation == nullptr) key.velocity_violation = nullptr;
    if (r.torque_violation == nullptr) key.torque_violation = nullptr;
    if (r.cost == nullptr) key.cost = nullptr;
    if (r.iterations == nullptr) key.iterations = nullptr;
    if (r.within_limits == nullptr) key.within_limits = nullptr;
  }

  // [control-thread] copies up (host memory, staged), the kernels, copies back.
  kiln_status enqueue_solve(KernelParams &p, const kiln_trajopt_problem &problem, const kiln_trajopt_result &result,
                            bool device_memory, void *stream, kiln::plugin::Message &message) noexcept {
    const Arrays &d = this->device_arrays_;
    kiln_status s = KILN_OK;
    if (!device_memory && (s = inputs::upload(this->gpu_, problem, this->host_, d, stream, message)) != KILN_OK)
      return s;
    if (!device_memory) inputs::point_at(d, problem, &p);
    p.scratch = d.scratch;
    p.summaries = d.summaries;
    p.done = d.done;
    // Seed 0 of every problem, then the other seeds where it did not converge (their blocks return at once
    // elsewhere), then the best seed of each problem brought within the limits where it is not (with one seed,
    // by the block that solved it), then its outputs.
    p.seed_base = 0, p.seed_span = 1;
    if ((s = this->gpu_.launch_seeds(p, p.count, stream, "solve: launching the seed kernel", message)) != KILN_OK)
      return s;
    if (p.seeds > 1) {
      p.seed_base = 1, p.seed_span = p.seeds - 1;
      if ((s = this->gpu_.launch_seeds(p, p.count * p.seed_span, stream, "solve: launching the seed kernel",
                                       message)) != KILN_OK)
        return s;
      p.limits_pass = 1;
      if ((s = this->gpu_.launch_seeds(p, p.count, stream, "solve: launching the seed kernel's limits pass",
                                       message)) != KILN_OK)
        return s;
      p.limits_pass = 0;
    }
    if ((s = this->gpu_.launch_finalize(p, p.count, stream, "solve: launching the finalize kernel", message)) !=
        KILN_OK)
      return s;
    if (!device_memory &&
        (s = inputs::download(this->gpu_, d, this->host_, problem, stream, message, &result)) != KILN_OK)
      return s;
    return KILN_OK;
  }

  void copy_outputs(const kiln_trajopt_result &pending, uint32_t count) const noexcept {
    inputs::copy_outputs(this->host_, pending, count);
  }
};

}  // namespace kiln_trajopt

#include "trajopt_tables.hpp"
