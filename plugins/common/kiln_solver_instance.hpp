// kiln plugins: the instance every solver plugin kind is (kiln.ik, kiln.trajopt): the lifecycle
// (activate on a device or host only, deactivate, release), the batch buffers and their staging,
// the solve in flight (solve_async / poll / wait, the call's common checks, the device enqueue's
// frame), the warm-start slots and their snapshot (export_state / import_state), the self-test's
// frame and info(). Plain C++: what touches a GPU is the Device policy (kiln_solve_in_flight.hpp
// names what it offers), what is the solver's own is Derived.
//
// SolverInstance<Derived, Device, Kind>, a CRTP base. Kind describes the interface: derived from
// SolverTypes<Params, Arrays, Limits, Model, RobotModel> (the kernels' parameters: settings, count,
// seeds, limits, warm_q, warm_valid, warm_start; the buffers: warm_q and warm_valid at least; the
// generated chain: kDof, kRobot, kBaseLink, kTipLink, kSource; the kiln_robotmodel.hpp Model whose
// table kiln.robotmodel/1 is), with KILN_SOLVER_KIND(kind, KIND) (the interface's structs and
// constants by the ABI's names) and kBatchItems ("targets"), kMaxBatch, kSlotFloats (floats per
// warm slot), kProblemMinSize and kResultMinSize (the structs' sizes at the interface's first
// revision: a smaller struct_size is refused, a larger one is read up to the plugin's sizeof, and
// the fields past the caller's take their defaults, zero).
// Derived (befriending the base) offers its interface table (static const table: the kit's
// c_trampolines and its own entry points) and:
//   static const char *resolve(const Options *, Settings *)   options -> settings, or what is wrong;
//   size_t host_bytes(uint32_t slots); Arrays carve_host(unsigned char *block, uint32_t slots);
//   kiln_status open_device(uint32_t slots, size_t *device_bytes, size_t *host_bytes, message)
//       gpu_.open, carve device_arrays_ and host_ (the pinned staging), any warm-up (after
//       gpu_.place(params, message) took activate's context and stream priority);
//   void describe_active(char *text, size_t size, size_t device_bytes, const char *kernel);
//   void fill_info(Info &)  the interface's own info fields;
//   kiln_status check_inputs(const Problem &, const Result &, bool device_memory, message)  the
//       arrays of a solve of count > 0;
//   void prepare(Params &, const Problem &, const Result &, bool device_memory)  the kernels' pointers
//       (and host-memory inputs staged where the solver reads them from host_);
//   void solve_on_host(Params &); kiln_status enqueue_solve(Params &, const Problem &, const Result &,
//       bool device_memory, void *stream, message)   copies up, launches, copies back (no host work:
//       it may be captured into a graph and replayed);
//   void stage(const Problem &)   host-memory inputs into host_ not staged by prepare (each solve);
//   void graph_key(Params &key, const Params &p, const Problem &, const Result &)   key := p's bytes
//       as the device work of a host-memory solve sees them (equal keys: equal work, so a captured
//       graph of it is replayed);
//   void copy_outputs(const Result &pending, uint32_t count)   wait(): staging -> the caller's;
//   static constexpr bool kHostSolvesInPlace   the host path writes the caller's buffers itself;
//   kiln_status write_state(const SlotSnapshot &, buffer, capacity, size, message) const;
//   kiln_status read_state(blob, size, float *q, uint8_t *valid, message)  checks a blob and, when
//       it is accepted, writes every slot (a refused blob changes nothing);
//   template <class Solve> kiln_status run_selftest(Solve solve, message).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>

#include "kiln/ext/robotmodel.h"
#include "kiln/ext/selftest.h"
#include "kiln/plugin.hpp"
#include "kiln_activation_record.hpp"
#include "kiln_c_trampolines.hpp"
#include "kiln_interface_structs.hpp"
#include "kiln_slot_snapshot.hpp"
#include "kiln_solve_in_flight.hpp"
#include "kiln_state_blob.hpp"

// In a Kind: what a solver interface kiln.<kind>/1 (abi/kiln/ext/<kind>.h) names by the ABI's
// pattern (kiln_<kind>_problem, KILN_<KIND>_IDLE, ...), and the generated chain's tag.
#define KILN_SOLVER_KIND(kind, KIND)                                                                                 \
  using Problem = kiln_##kind##_problem;                                                                             \
  using Result = kiln_##kind##_result;                                                                               \
  using Info = kiln_##kind##_info;                                                                                   \
  static constexpr const char *kInterface = KILN_##KIND##_INTERFACE_ID;                                              \
  static constexpr const char *kStructPrefix = "kiln_" #kind;                                                        \
  static constexpr const char *kMacroPrefix = "KILN_" #KIND;                                                         \
  static constexpr int32_t kIdle = KILN_##KIND##_IDLE, kDone = KILN_##KIND##_DONE, kRunning = KILN_##KIND##_RUNNING; \
  static constexpr int32_t kMemoryHost = KILN_##KIND##_MEMORY_HOST, kMemoryDevice = KILN_##KIND##_MEMORY_DEVICE;     \
  static constexpr uint32_t kWarmStart = KILN_##KIND##_SOLVE_WARM_START;                                             \
  static constexpr const char *kChainTag = KILN_PLUGIN_STRINGIFY(KILN_FK_CHAIN_TAG)

namespace kiln_plugin_common {

// The types a Kind names (see above).
template <class ParamsT, class ArraysT, class LimitsT, class ModelT, class RobotModelT>
struct SolverTypes {
  using Params = ParamsT;
  using Arrays = ArraysT;
  using Limits = LimitsT;
  using Model = ModelT;
  using RobotModel = RobotModelT;
};

template <class Derived, class Device, class Kind>
class SolverInstance : public kiln::plugin::Instance {
 public:
  using Problem = typename Kind::Problem;
  using Result = typename Kind::Result;
  using Info = typename Kind::Info;
  using Params = typename Kind::Params;
  using Arrays = typename Kind::Arrays;
  using Message = kiln::plugin::Message;

  SolverInstance(const kiln_host_services *host, const typename Kind::Limits &limits)
      : Instance(host), gpu_(host), limits_(limits) {}
  ~SolverInstance() override { release(); }

  kiln_status activate(const kiln_activate_params &params, Message &message) override {
    if (params.max_batch > Kind::kMaxBatch) {
      message.format("activate: max_batch = %u exceeds the solver's limit of %u %s", params.max_batch, Kind::kMaxBatch,
                     Kind::kBatchItems);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    device_ = params.device_ordinal;
    max_batch_ = params.max_batch;
    const uint32_t slots = max_batch_ > 0 ? max_batch_ : 1u;
    snapshot_.reset(max_batch_, size_t{1} + Kind::kSlotFloats);  // every slot empty
    if (device_ < 0) {
      const size_t bytes = self().host_bytes(slots);
      host_block_.reset(new unsigned char[bytes]());
      host_ = self().carve_host(host_block_.get(), slots);
      activation_.set_host_bytes(bytes);
      activation_.publish(device_, max_batch_);
      return KILN_OK;
    }
    size_t device_bytes = 0, host_bytes = 0;
    kiln_status status = gpu_.place(params, message);
    if (status != KILN_OK) return status;
    on_device_ = true;  // from here release() closes gpu_, which frees whatever open got to
    status = self().open_device(slots, &device_bytes, &host_bytes, message);
    if (status != KILN_OK) return status;
    activation_.set_device_bytes(device_bytes);
    activation_.set_host_bytes(host_bytes);
    activation_.publish(device_, max_batch_);
    char kernel[320], text[512];
    gpu_.describe(kernel, sizeof kernel);
    self().describe_active(text, sizeof text, device_bytes, kernel);
    log(KILN_LOG_INFO, text);
    return KILN_OK;
  }

  // The solver's interface, kiln.selftest/1 and kiln.robotmodel/1.
  const void *get_interface(const char *interface_id) const noexcept override {
    if (std::strcmp(interface_id, Kind::kInterface) == 0) return &Derived::table;
    if (std::strcmp(interface_id, KILN_SELFTEST_INTERFACE_ID) == 0) return &selftest_table;
    if (std::strcmp(interface_id, KILN_ROBOTMODEL_INTERFACE_ID) == 0) return &Kind::RobotModel::table;
    return nullptr;
  }

  static const kiln_selftest_v1 selftest_table;

  void deactivate() noexcept override {
    release();
    device_ = -1;
    max_batch_ = 0;
    activation_.clear();
  }

  // [setup-thread] The slots as the last completed solve left them; may run while the control
  // thread keeps solving. Not active: a blob of 0 slots.
  kiln_status export_state(void *buffer, size_t capacity, size_t *size, Message &message) const override {
    return self().write_state(snapshot_, buffer, capacity, size, message);
  }

  // [setup-thread] Replaces every slot (those past the blob's empty); no real-time call may run.
  // A refused blob changes nothing.
  kiln_status import_state(const void *blob, size_t size, Message &message) override {
    kiln_status status = require_idle(active(), in_flight_, "import_state",
                                      "the state lives in what activate reserves, so activate first", message);
    if (status != KILN_OK) return status;
    // Host only, host_ holds the state itself; on a device it is the staging copy sent up.
    if ((status = self().read_state(blob, size, host_.warm_q, host_.warm_valid, message)) != KILN_OK) return status;
    if (device_ >= 0 &&
        (status = upload_warm_slots(gpu_, device_arrays_.warm_q, device_arrays_.warm_valid, host_.warm_q,
                                    host_.warm_valid, max_batch_, Kind::kSlotFloats, message)) != KILN_OK)
      return status;
    snapshot_.publish(host_.warm_q, host_.warm_valid, max_batch_);
    return KILN_OK;
  }

  // [setup-thread] kiln.selftest/1: the plugin's checks through solve_async + wait, recording nothing.
  kiln_status selftest(Message &message) {
    const kiln_status idle = require_idle(active(), in_flight_, "selftest", "call activate first", message);
    if (idle != KILN_OK) return idle;
    const auto solve = [this](const Problem &problem, const Result &result, Message &text) {
      const kiln_status status = solve_async(&problem, &result, text, /*record=*/false);
      return status != KILN_OK ? status : wait(text);
    };
    return self().run_selftest(solve, message);
  }

  kiln_status info(Info *out) const noexcept {
    if (out == nullptr || out->struct_size == 0) return KILN_ERR_INVALID_ARGUMENT;
    Info full{};
    full.struct_size = out->struct_size;
    full.dof = Kind::Model::kDof;
    activation_.report(full);
    copy_name(full.robot, Kind::Model::kRobot);
    copy_name(full.base_link, Kind::Model::kBaseLink);
    copy_name(full.tip_link, Kind::Model::kTipLink);
    copy_name(full.source, Kind::Model::kSource);
    self().fill_info(full);
    copy_versioned(out, full);
    return KILN_OK;
  }

  // record: the solve updates the slots' last solutions (every caller's solve; not the self-test's).
  kiln_status solve_async(const Problem *caller_problem, const Result *caller_result, Message &message,
                          bool record = true) noexcept {
    kiln_status status = require_idle(active(), in_flight_, "solve", "call activate first", message);
    if (status != KILN_OK) return status;
    // Every byte zero, padding included: the graph key compares the bytes.
    static_assert(std::is_trivially_copyable<Params>::value, "Params is compared and copied as bytes");
    Params p;
    std::memset(static_cast<void *>(&p), 0, sizeof p);
    if ((status = check_sizes(caller_problem, caller_result, message)) != KILN_OK) return status;
    // The plugin's revision of both structs, whatever the caller's: later fields zero (their defaults).
    Problem full_problem{};
    Result full_result{};
    copy_prefix(&full_problem, caller_problem);
    copy_prefix(&full_result, caller_result);
    const Problem *problem = &full_problem;
    const Result *result = &full_result;
    status = check_call(problem, &p.settings, message);
    if (status != KILN_OK || problem->count == 0) return status;
    const bool device_memory = problem->memory == Kind::kMemoryDevice;
    if ((status = self().check_inputs(*problem, *result, device_memory, message)) != KILN_OK) return status;
    const uint32_t count = problem->count;
    p.count = count;
    p.seeds = p.settings.seeds;
    p.limits = limits_;
    const Arrays &slots = device_ < 0 ? host_ : device_arrays_;
    p.warm_q = record ? slots.warm_q : nullptr;
    p.warm_valid = record ? slots.warm_valid : nullptr;
    p.warm_start = record && (p.settings.flags & Kind::kWarmStart) != 0;
    self().prepare(p, *problem, *result, device_memory);
    if (device_ < 0) {  // finishes before this returns
      self().solve_on_host(p);
      if (record) snapshot_.publish(host_.warm_q, host_.warm_valid, count);
    } else if ((status = enqueue(p, *problem, *result, device_memory, record, message)) != KILN_OK) {
      return status;
    }
    in_flight_ = true;
    pending_record_ = record && device_ >= 0;  // host only, published above
    pending_copy_ = !device_memory && (device_ >= 0 || !Derived::kHostSolvesInPlace);
    pending_count_ = count;
    pending_ = *result;
    return KILN_OK;
  }

  int32_t poll() noexcept {
    if (!in_flight_) return Kind::kIdle;
    if (device_ < 0) return Kind::kDone;
    // Finished, or failed: either way wait() no longer blocks (and reports a failure).
    return gpu_.finished() ? Kind::kDone : Kind::kRunning;
  }

  kiln_status wait(Message &message) noexcept {
    if (!in_flight_) return KILN_OK;
    in_flight_ = false;
    if (device_ >= 0) {
      const kiln_status status = wait_on_device(gpu_, message);
      if (status != KILN_OK) return status;
    }
    if (pending_record_) snapshot_.publish(host_.warm_q, host_.warm_valid, pending_count_);
    if (pending_copy_) self().copy_outputs(pending_, pending_count_);
    return KILN_OK;
  }

 protected:
  // The chain, for the state blob's identity fields.
  static StateIdentity chain_identity() noexcept {
    return {static_cast<uint32_t>(Kind::Model::kDof), Kind::kChainTag, Kind::Model::kRobot};
  }

  Derived &self() noexcept { return static_cast<Derived &>(*this); }
  const Derived &self() const noexcept { return static_cast<const Derived &>(*this); }

  Device gpu_;
  const typename Kind::Limits limits_;
  int32_t device_ = -1;
  uint32_t max_batch_ = 0;
  bool on_device_ = false;                       // gpu_.open was called: close() frees what it took
  std::unique_ptr<unsigned char[]> host_block_;  // host only: every buffer
  Arrays device_arrays_;
  Arrays host_;  // pinned staging (on a device) or host_block_ (host only)

 private:
  static kiln_status check_sizes(const Problem *problem, const Result *result, Message &message) noexcept {
    if (problem == nullptr || problem->struct_size < Kind::kProblemMinSize) {
      message.format("solve: problem is NULL or its struct_size is smaller than %s_problem of %s", Kind::kStructPrefix,
                     Kind::kInterface);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (result == nullptr || result->struct_size < Kind::kResultMinSize) {
      message.format("solve: result is NULL or its struct_size is smaller than %s_result of %s", Kind::kStructPrefix,
                     Kind::kInterface);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    return KILN_OK;
  }

  template <class Struct>
  static void copy_prefix(Struct *full, const Struct *caller) noexcept {
    std::memcpy(full, caller, caller->struct_size < sizeof(Struct) ? caller->struct_size : sizeof(Struct));
  }

  // The checks every solver interface makes of a solve call after the sizes, in this order; then
  // count == 0 is a solve that does nothing.
  kiln_status check_call(const Problem *problem, decltype(Params::settings) *settings, Message &message) const noexcept {
    if (const char *bad = Derived::resolve(problem->options, settings)) {
      message.format("solve: %s", bad);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (problem->count > max_batch_) {
      message.format("solve: count = %u exceeds max_batch = %u reserved at activate", problem->count, max_batch_);
      return KILN_ERR_CAPACITY;
    }
    if (problem->memory != Kind::kMemoryHost && problem->memory != Kind::kMemoryDevice) {
      message.format("solve: problem->memory = %d is neither %s_MEMORY_HOST (0) nor %s_MEMORY_DEVICE (1)",
                     static_cast<int>(problem->memory), Kind::kMacroPrefix, Kind::kMacroPrefix);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (problem->memory == Kind::kMemoryDevice && device_ < 0) {
      message.format("solve: %s_MEMORY_DEVICE on an instance activated host only (device_ordinal -1)",
                     Kind::kMacroPrefix);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    return KILN_OK;
  }

  // [control-thread] On the solve's stream: the solver's copies and kernels, the warm slots back
  // (recording solves), the event. A host-memory solve on the instance's own stream runs as a CUDA
  // graph where the Device can capture one: captured when its work differs from the last solve's
  // (graph_key, record), replayed while it repeats, as a control loop's solves do (one launch in
  // place of a copy up, the kernels and the copies back). A stream that cannot capture, or a
  // capture that fails, leaves the instance enqueueing directly.
  kiln_status enqueue(Params &p, const Problem &problem, const Result &result, bool device_memory, bool record,
                      Message &message) noexcept {
    void *stream = problem.stream != nullptr ? problem.stream : gpu_.stream();
    kiln_status s = gpu_.select("solve: selecting the device", message);
    if (s != KILN_OK) return s;
    if (!device_memory) self().stage(problem);
    if constexpr (CapturesGraphs<Device>::value) {
      if (!device_memory && problem.stream == nullptr && graphs_) {
        GraphKey key;
        std::memset(static_cast<void *>(&key), 0, sizeof key);
        self().graph_key(key.params, p, problem, result);
        key.record = record;
        if (!gpu_.has_graph() || std::memcmp(&key, &graph_key_, sizeof key) != 0) {
          graphs_ = gpu_.begin_capture(stream);
          if (graphs_) {
            Params captured = p;
            const bool enqueued = enqueue_work(captured, problem, result, device_memory, record, stream, message) == KILN_OK;
            graphs_ = gpu_.end_capture(stream, enqueued);
            std::memcpy(static_cast<void *>(&graph_key_), &key, sizeof key);
          }
#ifdef KILN_PLUGIN_TRACE_GRAPHS  // a measurement build's trace of what the solves run as
          std::fprintf(stderr, "kiln plugin: solve of %u captured: %s\n", static_cast<unsigned>(p.count),
                       graphs_ ? "replaying it" : "failed, enqueueing directly from now on");
#endif
        }
        if (graphs_) {
          if ((s = gpu_.launch_graph(stream, message)) != KILN_OK) return s;
          return gpu_.record(stream, message);
        }
      }
    }
    if ((s = enqueue_work(p, problem, result, device_memory, record, stream, message)) != KILN_OK) return s;
    return gpu_.record(stream, message);
  }
  // The device work of a solve: the solver's copies and kernels, the warm slots back.
  kiln_status enqueue_work(Params &p, const Problem &problem, const Result &result, bool device_memory, bool record,
                           void *stream, Message &message) noexcept {
    kiln_status s = self().enqueue_solve(p, problem, result, device_memory, stream, message);
    if (s != KILN_OK || !record) return s;
    return download_warm_slots(gpu_, host_.warm_q, host_.warm_valid, device_arrays_.warm_q, device_arrays_.warm_valid,
                               p.count, Kind::kSlotFloats, stream, message);
  }

  // Devices that offer begin_capture / end_capture / launch_graph (the CUDA runtime's).
  template <class D, class = void>
  struct CapturesGraphs : std::false_type {};
  template <class D>
  struct CapturesGraphs<D, std::void_t<decltype(&D::launch_graph)>> : std::true_type {};
  struct GraphKey {
    Params params;
    bool record;
  };
  GraphKey graph_key_{};
  bool graphs_ = true;  // false once the stream could not capture or a capture failed

  void release() noexcept {
    if (in_flight_ && on_device_) drain_on_device(gpu_);
    in_flight_ = false;
    snapshot_.clear();
    host_block_.reset();
    if (on_device_) gpu_.close();  // and its graph
    on_device_ = false;
    graphs_ = true;
    device_arrays_ = Arrays{};
    host_ = Arrays{};
  }

  // What export_state reads: the slots' last solutions, published after each recording solve.
  SlotSnapshot snapshot_;

  // The solve in flight.
  bool in_flight_ = false;
  bool pending_record_ = false;
  bool pending_copy_ = false;  // wait() copies the staged outputs to the caller's buffers
  uint32_t pending_count_ = 0;
  Result pending_{};

  // What info() reports from any thread.
  ActivationRecord activation_;
};

template <class Derived, class Device, class Kind>
const kiln_selftest_v1 SolverInstance<Derived, Device, Kind>::selftest_table = {sizeof(kiln_selftest_v1),
                                                                                &c_trampolines::selftest<Derived>};

}  // namespace kiln_plugin_common
