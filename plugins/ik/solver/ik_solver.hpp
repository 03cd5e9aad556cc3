// kiln IK plugin: the instance both forms share (kiln.ik/1 and kiln.selftest/1 behind it), on the
// plugin kit's SolverInstance (plugins/common/kiln_solver_instance.hpp: lifecycle, solve in
// flight, warm-start slots, state blob, self-test frame). What is IK's own is here: the targets'
// checks, the buffers' layout, the warm-up launch, the host and device solve, the state header.
// Plain C++: what touches a GPU is the Device policy, one per form:
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

#include "ik_batch_host.hpp"
#include "ik_layout.hpp"
#include "ik_params.hpp"
#include "ik_selftest.hpp"
#include "ik_state.hpp"
#include "kiln/ext/ik.h"
#include "kiln/ext/selftest.h"
#include "kiln/plugin.hpp"
#include "kiln_robotmodel.hpp"
#include "kiln_solver_instance.hpp"

#ifndef KILN_IK_MAX_ITERATIONS_CAP
#define KILN_IK_MAX_ITERATIONS_CAP 0u  // none
#endif

namespace {

constexpr uint32_t kIterationCap = KILN_IK_MAX_ITERATIONS_CAP;
constexpr uint32_t kMappedSlots = 64;  // max_batch up to which the arrays stay in pinned host memory

// kiln.ik/1 as the kit's SolverInstance sees it.
struct IkKind : kiln_plugin_common::SolverTypes<
                    KernelParams, Arrays, FloatLimits, Chain,
                    kiln_plugin_common::robotmodel::Model<Chain, kiln_plugin_common::robotmodel::NoDynamics>> {
  KILN_SOLVER_KIND(ik, IK);
  static constexpr const char *kBatchItems = "targets";
  static constexpr uint32_t kMaxBatch = 1u << 26;  // keeps (target, seed) thread indices in 32 bits
  static constexpr size_t kSlotFloats = kDof;
  static constexpr size_t kProblemMinSize = sizeof(kiln_ik_problem), kResultMinSize = sizeof(kiln_ik_result);
};

template <class Device>
class IkSolver final : public kiln_plugin_common::SolverInstance<IkSolver<Device>, Device, IkKind> {
  friend class kiln_plugin_common::SolverInstance<IkSolver, Device, IkKind>;

 public:
  explicit IkSolver(const kiln_host_services *host) : IkSolver::SolverInstance(host, float_limits()) {}

  static const kiln_ik_v1 table;

 private:
  // activate: host only, one block; on a device, the same layout in device memory and pinned staging.
  static size_t host_bytes(uint32_t slots) { return Layout(slots).total; }
  static Arrays carve_host(unsigned char *block, uint32_t slots) { return Arrays::carve(block, Layout(slots)); }

  kiln_status open_device(uint32_t slots, size_t *device_bytes, size_t *host_bytes,
                          kiln::plugin::Message &message) noexcept {
    const Layout layout(slots);
    unsigned char *device_block = nullptr, *pinned = nullptr;
    kiln_status status = this->gpu_.open(this->device_, layout.total, &device_block, &pinned, message);
    if (status != KILN_OK) return status;
    this->host_ = Arrays::carve(pinned, layout);
    // A controller's instance (a few slots) keeps every array in the pinned block, which the kernel
    // reads and writes in place (mapped: pinned memory has one address on the host and the device),
    // so that a solve is the kernel alone, without a copy command's latency before and after it.
    // Its copies are onto themselves, which the Devices skip. A larger batch copies: the kernel's
    // accesses over the bus would cost more.
    this->device_arrays_ = slots <= kMappedSlots ? this->host_ : Arrays::carve(device_block, layout);
    std::memset(pinned, 0, layout.total);
    // Warm up: one empty launch, so that module loading and first-launch work happen here.
    KernelParams warm{};
    warm.seeds = 1;
    warm.settings.max_iterations = 1;
    warm.limits = this->limits_;
    warm.targets = this->device_arrays_.targets;
    warm.q = this->device_arrays_.q;
    if ((status = this->gpu_.launch(warm, 1, this->gpu_.stream(), "activate: launching the IK kernel", message)) !=
            KILN_OK ||
        (status = this->gpu_.synchronize(this->gpu_.stream(), "activate: running the IK kernel", message)) != KILN_OK)
      return status;
    *device_bytes = layout.total;
    *host_bytes = layout.total;
    return KILN_OK;
  }

  void describe_active(char *text, size_t size, size_t device_bytes, const char *kernel) const noexcept {
    std::snprintf(text, size, "kiln.ik %s: active on device %d, max_batch %u, %zu bytes of device memory, %s",
                  Chain::kRobot, this->device_, this->max_batch_, device_bytes, kernel);
  }

  static void fill_info(kiln_ik_info &info) noexcept {
    info.max_seeds = KILN_IK_MAX_SEEDS;
    info.solve_flags = kiln_ik::kSolveFlags;
  }

  kiln_status write_state(const kiln_plugin_common::SlotSnapshot &snapshot, void *buffer, size_t capacity, size_t *size,
                          kiln::plugin::Message &message) const {
    return kiln_ik::state::write_blob(this->chain_identity(), snapshot, buffer, capacity, size, message);
  }

  kiln_status read_state(const void *blob, size_t size, float *q, uint8_t *valid, kiln::plugin::Message &message) {
    kiln_ik::state::Parsed parsed;
    const kiln_status status =
        kiln_ik::state::parse_blob(this->chain_identity(), this->max_batch_, blob, size, &parsed, message);
    if (status == KILN_OK) kiln_ik::state::unpack(parsed, kDof, this->max_batch_, q, valid);
    return status;
  }

  // kiln.selftest/1: ik_selftest.hpp.
  template <class Solve>
  kiln_status run_selftest(Solve solve, kiln::plugin::Message &message) {
    return kiln_ik::selftest::run<Chain>(this->max_batch_, kiln_ik::Settings{}, solve, message);
  }

  static const char *resolve(const kiln_ik_options *options, kiln_ik::Settings *settings) {
    return kiln_ik::resolve_settings(options, settings);
  }

  // A solve of count > 0: the arrays there, host-memory targets poses.
  static kiln_status check_inputs(const kiln_ik_problem &problem, const kiln_ik_result &result, bool device_memory,
                                  kiln::plugin::Message &message) noexcept {
    if (problem.targets == nullptr || result.q == nullptr) {
      message.set("solve: problem->targets and result->q must not be NULL");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (device_memory) return KILN_OK;
    for (uint32_t i = 0; i < problem.count; ++i) {
      kiln_ik::Target<float> goal;
      if (!kiln_ik::make_target(problem.targets + size_t{i} * KILN_IK_POSE_SIZE, goal)) {
        message.format("solve: target %u is not a pose (a value is not finite or its quaternion is zero)", i);
        return KILN_ERR_INVALID_ARGUMENT;
      }
    }
    return KILN_OK;
  }

  // Device memory: the kernel reads and writes the caller's buffers. Host memory: the inputs into
  // this->host_ (so the caller may reuse them at once), the outputs staged there.
  void prepare(KernelParams &p, const kiln_ik_problem &problem, const kiln_ik_result &result,
               bool device_memory) noexcept {
    if (kIterationCap > 0 && p.settings.max_iterations > kIterationCap) p.settings.max_iterations = kIterationCap;
    p.group_shift = group_shift_for(p.seeds);
    if (device_memory) {
      p.targets = problem.targets;
      p.initial_q = problem.initial_q;
      p.q = result.q;
      p.position_error = result.position_error;
      p.orientation_error = result.orientation_error;
      p.converged = result.converged;
      p.iterations = result.iterations;
      return;
    }
    const size_t count = problem.count;
    std::memcpy(this->host_.targets, problem.targets, count * KILN_IK_POSE_SIZE * sizeof(float));
    if (problem.initial_q != nullptr)
      std::memcpy(this->host_.initial_q, problem.initial_q, count * kDof * sizeof(float));
    point_at(this->host_, problem, &p);
  }

  // The kernel reads and writes the arrays of a block (staging or device); absent inputs stay absent.
  static void point_at(const Arrays &a, const kiln_ik_problem &problem, KernelParams *p) noexcept {
    p->targets = a.targets;
    p->initial_q = problem.initial_q != nullptr ? a.initial_q : nullptr;
    p->q = a.q;
    p->position_error = a.position_error;
    p->orientation_error = a.orientation_error;
    p->converged = a.converged;
    p->iterations = a.iterations;
  }

  static constexpr bool kHostSolvesInPlace = false;  // into this->host_, copied out by wait()
  static void solve_on_host(const KernelParams &p) noexcept { solve_host(p); }

  // [control-thread] prepare staged the host-memory inputs; p points at the staging, so it is what the
  // device work depends on (equal keys enqueue equal work).
  void stage(const kiln_ik_problem &) noexcept {}
  void graph_key(KernelParams &key, const KernelParams &p, const kiln_ik_problem &, const kiln_ik_result &) const noexcept {
    std::memcpy(static_cast<void *>(&key), &p, sizeof p);
  }

  // [control-thread] Copies up (host memory), one kernel, copies back: all on stream.
  kiln_status enqueue_solve(KernelParams &p, const kiln_ik_problem &problem, const kiln_ik_result &, bool device_memory,
                            void *stream, kiln::plugin::Message &message) noexcept {
    const size_t count = p.count;
    const Arrays &d = this->device_arrays_;
    kiln_status s = KILN_OK;
    if (!device_memory) {
      if ((s = this->gpu_.to_device(d.targets, this->host_.targets, count * KILN_IK_POSE_SIZE * sizeof(float), stream,
                                    "solve: copying the targets to the device", message)) != KILN_OK)
        return s;
      if (problem.initial_q != nullptr &&
          (s = this->gpu_.to_device(d.initial_q, this->host_.initial_q, count * kDof * sizeof(float), stream,
                                    "solve: copying initial_q to the device", message)) != KILN_OK)
        return s;
      point_at(d, problem, &p);
    }
    const uint64_t threads = uint64_t{p.count} << p.group_shift;
    const unsigned blocks = static_cast<unsigned>((threads + kBlock - 1) / kBlock);
    if ((s = this->gpu_.launch(p, blocks, stream, "solve: launching the IK kernel", message)) != KILN_OK) return s;
    if (device_memory) return KILN_OK;
    // q .. iterations lie in this order in both reservations (Layout).
    const Arrays &h = this->host_;
    if (const size_t span = kiln_plugin_common::one_copy_span(d.q, d.iterations + count, h.q, h.iterations + count))
      return this->gpu_.to_host(h.q, d.q, span, stream, "solve: copying the results back", message);
    if (((s = this->gpu_.to_host(this->host_.q, d.q, count * kDof * sizeof(float), stream, "solve: copying q back",
                                 message)) != KILN_OK ||
         (s = this->gpu_.to_host(this->host_.position_error, d.position_error, count * sizeof(float), stream,
                                 "solve: copying the position errors back", message)) != KILN_OK ||
         (s = this->gpu_.to_host(this->host_.orientation_error, d.orientation_error, count * sizeof(float), stream,
                                 "solve: copying the orientation errors back", message)) != KILN_OK ||
         (s = this->gpu_.to_host(this->host_.converged, d.converged, count, stream,
                                 "solve: copying the converged flags back", message)) != KILN_OK ||
         (s = this->gpu_.to_host(this->host_.iterations, d.iterations, count * sizeof(uint32_t), stream,
                                 "solve: copying the iteration counts back", message)) != KILN_OK))
      return s;
    return KILN_OK;
  }

  // wait(): the staged outputs into the caller's buffers (those it passed).
  void copy_outputs(const kiln_ik_result &pending, uint32_t count) const noexcept {
    const size_t n = count;
    std::memcpy(pending.q, this->host_.q, n * kDof * sizeof(float));
    if (pending.position_error != nullptr)
      std::memcpy(pending.position_error, this->host_.position_error, n * sizeof(float));
    if (pending.orientation_error != nullptr)
      std::memcpy(pending.orientation_error, this->host_.orientation_error, n * sizeof(float));
    if (pending.converged != nullptr) std::memcpy(pending.converged, this->host_.converged, n);
    if (pending.iterations != nullptr) std::memcpy(pending.iterations, this->host_.iterations, n * sizeof(uint32_t));
  }
};

}  // namespace

#include "ik_tables.hpp"
