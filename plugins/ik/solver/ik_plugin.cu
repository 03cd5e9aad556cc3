// kiln IK plugin: interface "kiln.ik/1" (abi/kiln/ext/ik.h) for one serial chain.
//
// The chain comes from the generated header kiln_fk_chain.cuh (kiln-urdf-fk, one per robot, found
// through the include path), so this one source builds the solver of any robot:
//   kiln_add_plugin(kiln_ik_<robot> SOURCES ik_plugin.cu) + the robot's generated directory
//   on the include path + KILN_IK_PLUGIN_ID="org.kiln.ik.<robot>".
//
// The batch solve itself (kernel and host loop) is ik_batch.cuh. Every buffer is reserved at
// activate for max_batch targets; a solve copies, launches one kernel and records one event.
//
// Hot swap: each slot's last solution (the warm-start state, ik.h "Warm start") lives beside the
// other buffers (on the device when active on one); a solve that records copies it back with its
// outputs, and the control thread publishes it to a snapshot (ik_state.hpp) that export_state
// reads from a setup thread. "kiln.selftest/1" runs ik_selftest.hpp through solve_async + wait.
//
// Build-time variants (plugins/ik/README.md, "Variants"): KILN_IK_INITIAL_DAMPING (the damping
// when options->damping is 0), KILN_IK_MAX_ITERATIONS_CAP (a cap on max_iterations),
// KILN_IK_VARIANT (appended to the plugin version) and KILN_IK_FAULT_WRONG_ANSWERS (a deliberately
// broken build whose self-test fails, for tests and demos of a refused swap).
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "kiln/ext/ik.h"
#include "kiln/ext/selftest.h"
#include "kiln/plugin.hpp"
#include "kiln_fk_chain.cuh"
#include "ik_batch.cuh"
#include "ik_selftest.hpp"
#include "ik_state.hpp"

#ifndef KILN_IK_PLUGIN_ID
#define KILN_IK_PLUGIN_ID "org.kiln.ik"
#endif
#define KILN_IK_PLUGIN_BASE_VERSION "1.1.0"
#ifdef KILN_IK_VARIANT
#define KILN_IK_PLUGIN_VERSION KILN_IK_PLUGIN_BASE_VERSION "+" KILN_IK_VARIANT
#else
#define KILN_IK_PLUGIN_VERSION KILN_IK_PLUGIN_BASE_VERSION
#endif
#ifndef KILN_IK_MAX_ITERATIONS_CAP
#define KILN_IK_MAX_ITERATIONS_CAP 0u  // none
#endif

namespace {

constexpr uint32_t kMaxBatchLimit = 1u << 26;   // keeps (target, seed) thread indices in 32 bits
constexpr uint32_t kIterationCap = KILN_IK_MAX_ITERATIONS_CAP;
const char *const kChainTag = KILN_PLUGIN_STRINGIFY(KILN_FK_CHAIN_TAG);

// The model's limits as floats, rounded inwards so that a clamped float is inside the model's
// (double) limits.
FloatLimits float_limits() {
  FloatLimits limits{};
  for (int j = 0; j < kDof; ++j) {
    float lower = static_cast<float>(Chain::kLower[j]);
    float upper = static_cast<float>(Chain::kUpper[j]);
    if (static_cast<double>(lower) < Chain::kLower[j]) lower = std::nextafter(lower, INFINITY);
    if (static_cast<double>(upper) > Chain::kUpper[j]) upper = std::nextafter(upper, -INFINITY);
    limits.lower[j] = lower;
    limits.upper[j] = upper;
    if (Chain::kJointTypes[j] == Chain::kContinuous) limits.wrap |= 1u << j;
  }
  return limits;
}

void copy_name(char *destination, const char *source) {
  std::strncpy(destination, source, KILN_IK_NAME_CAPACITY - 1);
  destination[KILN_IK_NAME_CAPACITY - 1] = '\0';
}

// Offsets of the per-target arrays inside one reservation (device or staging), 256-byte aligned.
struct Layout {
  size_t targets, initial_q, q, position_error, orientation_error, converged, iterations, warm_q, warm_valid, total;
  explicit Layout(size_t batch) {
    size_t at = 0;
    const auto take = [&at](size_t bytes) {
      const size_t offset = at;
      at += (bytes + 255) / 256 * 256;
      return offset;
    };
    targets = take(batch * KILN_IK_POSE_SIZE * sizeof(float));
    initial_q = take(batch * kDof * sizeof(float));
    q = take(batch * kDof * sizeof(float));
    position_error = take(batch * sizeof(float));
    orientation_error = take(batch * sizeof(float));
    converged = take(batch * sizeof(uint8_t));
    iterations = take(batch * sizeof(uint32_t));
    warm_q = take(batch * kDof * sizeof(float));
    warm_valid = take(batch * sizeof(uint8_t));
    total = at;
  }
};

struct Arrays {
  float *targets = nullptr, *initial_q = nullptr, *q = nullptr, *position_error = nullptr,
        *orientation_error = nullptr;
  uint8_t *converged = nullptr;
  uint32_t *iterations = nullptr;
  float *warm_q = nullptr;  // the slots' last solutions: authoritative on the device, else in host memory
  uint8_t *warm_valid = nullptr;
  static Arrays carve(unsigned char *base, const Layout &layout) {
    Arrays a;
    a.targets = reinterpret_cast<float *>(base + layout.targets);
    a.initial_q = reinterpret_cast<float *>(base + layout.initial_q);
    a.q = reinterpret_cast<float *>(base + layout.q);
    a.position_error = reinterpret_cast<float *>(base + layout.position_error);
    a.orientation_error = reinterpret_cast<float *>(base + layout.orientation_error);
    a.converged = base + layout.converged;
    a.iterations = reinterpret_cast<uint32_t *>(base + layout.iterations);
    a.warm_q = reinterpret_cast<float *>(base + layout.warm_q);
    a.warm_valid = base + layout.warm_valid;
    return a;
  }
};

class IkSolver final : public kiln::plugin::Instance {
 public:
  explicit IkSolver(const kiln_host_services *host) : Instance(host), limits_(float_limits()) {}
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
    snapshot_.reset(max_batch_, kDof);  // every slot empty
    if (device_ < 0) {
      host_block_.reset(new unsigned char[layout.total]());
      host_ = Arrays::carve(host_block_.get(), layout);
      host_bytes_.store(layout.total, std::memory_order_relaxed);
      publish_activation();
      return KILN_OK;
    }
    if (!check(cudaSetDevice(device_), "activate: cudaSetDevice", message)) return status_of(last_error_);
    cudaFuncAttributes attributes{};
    if (!check(cudaFuncGetAttributes(&attributes, solve_kernel), "activate: loading the IK kernel", message))
      return status_of(last_error_);
    if (!check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "activate: cudaStreamCreate", message) ||
        !check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "activate: cudaEventCreate", message))
      return status_of(last_error_);
    void *device_block = nullptr;
    if (!check(cudaMalloc(&device_block, layout.total), "activate: cudaMalloc of the solver's buffers", message))
      return status_of(last_error_);
    device_block_ = static_cast<unsigned char *>(device_block);
    void *pinned = nullptr;
    if (!check(cudaMallocHost(&pinned, layout.total), "activate: cudaMallocHost of the staging buffers", message))
      return status_of(last_error_);
    pinned_block_ = static_cast<unsigned char *>(pinned);
    device_arrays_ = Arrays::carve(device_block_, layout);
    host_ = Arrays::carve(pinned_block_, layout);
    std::memset(pinned_block_, 0, layout.total);
    if (!check(cudaMemsetAsync(device_block_, 0, layout.total, stream_), "activate: clearing the solver's buffers",
               message))
      return status_of(last_error_);
    // Warm up: one empty launch, so that module loading and first-launch work happen here.
    KernelParams warm{};
    warm.seeds = 1;
    warm.settings.max_iterations = 1;
    warm.limits = limits_;
    warm.targets = device_arrays_.targets;
    warm.q = device_arrays_.q;
    solve_kernel<<<1, kBlock, 0, stream_>>>(warm);
    if (!check(cudaGetLastError(), "activate: launching the IK kernel", message) ||
        !check(cudaStreamSynchronize(stream_), "activate: running the IK kernel", message))
      return status_of(last_error_);
    device_bytes_.store(layout.total, std::memory_order_relaxed);
    host_bytes_.store(layout.total, std::memory_order_relaxed);
    publish_activation();
    char text[256];
    std::snprintf(text, sizeof text,
                  "kiln.ik %s: active on device %d, max_batch %u, %zu bytes of device memory, kernel %d registers, "
                  "%zu bytes local memory per thread",
                  Chain::kRobot, device_, max_batch_, layout.total, attributes.numRegs, attributes.localSizeBytes);
    log(KILN_LOG_INFO, text);
    return KILN_OK;
  }

  void deactivate() noexcept override {
    release();
    device_ = -1;
    max_batch_ = 0;
    active_device_.store(-1, std::memory_order_relaxed);
    active_batch_.store(0, std::memory_order_relaxed);
    device_bytes_.store(0, std::memory_order_relaxed);
    host_bytes_.store(0, std::memory_order_relaxed);
    is_active_.store(false, std::memory_order_release);
  }

  const void *get_interface(const char *interface_id) const noexcept override {
    if (std::strcmp(interface_id, KILN_IK_INTERFACE_ID) == 0) return &table;
    if (std::strcmp(interface_id, KILN_SELFTEST_INTERFACE_ID) == 0) return &selftest_table;
    return nullptr;
  }

  // [setup-thread] The slots as the last completed solve left them; may run while the control
  // thread keeps solving (ik.h, "Warm start"). Not active: a blob of 0 slots.
  kiln_status export_state(void *buffer, size_t capacity, size_t *size,
                           kiln::plugin::Message &message) const override {
    return kiln_ik::state::write_blob(identity(), snapshot_, buffer, capacity, size, message);
  }

  // [setup-thread] Replaces every slot (those past the blob's empty); no real-time call may run.
  // A refused blob changes nothing.
  kiln_status import_state(const void *blob, size_t size, kiln::plugin::Message &message) override {
    if (!active()) {
      message.set("import_state: the instance is not active; the state lives in what activate reserves, so activate "
                  "first");
      return KILN_ERR_STATE;
    }
    if (in_flight_) {
      message.set("import_state: a solve is in flight on this instance; call wait() first");
      return KILN_ERR_STATE;
    }
    kiln_ik::state::Parsed parsed;
    const kiln_status status = kiln_ik::state::parse_blob(identity(), max_batch_, blob, size, &parsed, message);
    if (status != KILN_OK) return status;
    // Host only, host_ holds the state itself; on a device it is the staging copy sent up.
    kiln_ik::state::unpack(parsed, kDof, max_batch_, host_.warm_q, host_.warm_valid);
    if (device_ >= 0) {
      const Arrays &d = device_arrays_;
      if (!check(cudaSetDevice(device_), "import_state: cudaSetDevice", message) ||
          !check(cudaMemcpyAsync(d.warm_q, host_.warm_q, size_t{max_batch_} * kDof * sizeof(float),
                                 cudaMemcpyHostToDevice, stream_),
                 "import_state: copying the state to the device", message) ||
          !check(cudaMemcpyAsync(d.warm_valid, host_.warm_valid, max_batch_, cudaMemcpyHostToDevice, stream_),
                 "import_state: copying the state to the device", message) ||
          !check(cudaStreamSynchronize(stream_), "import_state: copying the state to the device", message))
        return status_of(last_error_);
    }
    snapshot_.publish(host_.warm_q, host_.warm_valid, max_batch_);
    return KILN_OK;
  }

  // [setup-thread] kiln.selftest/1: ik_selftest.hpp through solve_async + wait, recording nothing.
  kiln_status selftest(kiln::plugin::Message &message) {
    if (!active()) {
      message.set("selftest: the instance is not active; call activate first");
      return KILN_ERR_STATE;
    }
    if (in_flight_) {
      message.set("selftest: a solve is in flight on this instance; call wait() first");
      return KILN_ERR_STATE;
    }
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
    const bool on = is_active_.load(std::memory_order_acquire);
    full.active = on ? 1u : 0u;
    full.max_batch = on ? active_batch_.load(std::memory_order_relaxed) : 0u;
    full.device_ordinal = on ? active_device_.load(std::memory_order_relaxed) : -1;
    full.device_bytes = device_bytes_.load(std::memory_order_relaxed);
    full.host_bytes = host_bytes_.load(std::memory_order_relaxed);
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
    if (!active()) {
      message.set("solve: the instance is not active; call activate first");
      return KILN_ERR_STATE;
    }
    if (in_flight_) {
      message.set("solve: a solve is in flight on this instance; call wait() first");
      return KILN_ERR_STATE;
    }
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
      cudaStream_t stream = problem->stream != nullptr ? static_cast<cudaStream_t>(problem->stream) : stream_;
      if (!check(cudaSetDevice(device_), "solve: cudaSetDevice", message)) return status_of(last_error_);
      if (!device_memory) {
        const Arrays &d = device_arrays_;
        if (!check(cudaMemcpyAsync(d.targets, host_.targets, size_t{count} * KILN_IK_POSE_SIZE * sizeof(float),
                                   cudaMemcpyHostToDevice, stream),
                   "solve: copying the targets to the device", message))
          return status_of(last_error_);
        if (problem->initial_q != nullptr &&
            !check(cudaMemcpyAsync(d.initial_q, host_.initial_q, size_t{count} * kDof * sizeof(float),
                                   cudaMemcpyHostToDevice, stream),
                   "solve: copying initial_q to the device", message))
          return status_of(last_error_);
        p.targets = d.targets;
        p.initial_q = problem->initial_q != nullptr ? d.initial_q : nullptr;
        p.q = d.q;
        p.position_error = d.position_error;
        p.orientation_error = d.orientation_error;
        p.converged = d.converged;
        p.iterations = d.iterations;
      }
      const uint64_t threads = uint64_t{count} << p.group_shift;
      const unsigned blocks = static_cast<unsigned>((threads + kBlock - 1) / kBlock);
      solve_kernel<<<blocks, kBlock, 0, stream>>>(p);
      if (!check(cudaGetLastError(), "solve: launching the IK kernel", message)) return status_of(last_error_);
      if (!device_memory) {
        const Arrays &d = device_arrays_;
        if (!check(cudaMemcpyAsync(host_.q, d.q, size_t{count} * kDof * sizeof(float), cudaMemcpyDeviceToHost, stream),
                   "solve: copying q back", message) ||
            !check(cudaMemcpyAsync(host_.position_error, d.position_error, size_t{count} * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream),
                   "solve: copying the position errors back", message) ||
            !check(cudaMemcpyAsync(host_.orientation_error, d.orientation_error, size_t{count} * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream),
                   "solve: copying the orientation errors back", message) ||
            !check(cudaMemcpyAsync(host_.converged, d.converged, size_t{count}, cudaMemcpyDeviceToHost, stream),
                   "solve: copying the converged flags back", message) ||
            !check(cudaMemcpyAsync(host_.iterations, d.iterations, size_t{count} * sizeof(uint32_t),
                                   cudaMemcpyDeviceToHost, stream),
                   "solve: copying the iteration counts back", message))
          return status_of(last_error_);
      }
      if (record) {
        const Arrays &d = device_arrays_;
        if (!check(cudaMemcpyAsync(host_.warm_q, d.warm_q, size_t{count} * kDof * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream),
                   "solve: copying the slots' solutions back", message) ||
            !check(cudaMemcpyAsync(host_.warm_valid, d.warm_valid, count, cudaMemcpyDeviceToHost, stream),
                   "solve: copying the slots' solutions back", message))
          return status_of(last_error_);
      }
      if (!check(cudaEventRecord(done_, stream), "solve: cudaEventRecord", message)) return status_of(last_error_);
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
    const cudaError_t state = cudaEventQuery(done_);
    // Finished, or failed: either way wait() no longer blocks (and reports a failure).
    return state == cudaErrorNotReady ? KILN_IK_RUNNING : KILN_IK_DONE;
  }

  kiln_status wait(kiln::plugin::Message &message) noexcept {
    if (!in_flight_) return KILN_OK;
    in_flight_ = false;
    if (device_ >= 0) {
      if (!check(cudaSetDevice(device_), "wait: cudaSetDevice", message) ||
          !check(cudaEventSynchronize(done_), "wait: the IK solve", message))
        return status_of(last_error_);
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

  void publish_activation() noexcept {
    active_device_.store(device_, std::memory_order_relaxed);
    active_batch_.store(max_batch_, std::memory_order_relaxed);
    is_active_.store(true, std::memory_order_release);
  }

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
    if (in_flight_ && done_ != nullptr) {
      cudaSetDevice(device_);
      cudaEventSynchronize(done_);  // a solve on a caller's stream may still use our buffers
    }
    in_flight_ = false;
    snapshot_.clear();
    host_block_.reset();
    if (stream_ != nullptr || done_ != nullptr || device_block_ != nullptr || pinned_block_ != nullptr) {
      if (device_ >= 0) cudaSetDevice(device_);
      if (stream_ != nullptr) cudaStreamSynchronize(stream_);
      if (done_ != nullptr) cudaEventDestroy(done_);
      if (stream_ != nullptr) cudaStreamDestroy(stream_);
      if (device_block_ != nullptr) cudaFree(device_block_);
      if (pinned_block_ != nullptr) cudaFreeHost(pinned_block_);
    }
    stream_ = nullptr;
    done_ = nullptr;
    device_block_ = nullptr;
    pinned_block_ = nullptr;
    device_arrays_ = Arrays{};
    host_ = Arrays{};
  }

  const FloatLimits limits_;
  int32_t device_ = -1;
  uint32_t max_batch_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  unsigned char *device_block_ = nullptr;
  unsigned char *pinned_block_ = nullptr;
  std::unique_ptr<unsigned char[]> host_block_;  // host-only staging
  Arrays device_arrays_;
  Arrays host_;  // staging: pinned (device) or host_block_ (host only)
  cudaError_t last_error_ = cudaSuccess;

  // What export_state reads: the slots' last solutions, published after each recording solve.
  kiln_ik::state::Snapshot snapshot_;

  // The solve in flight.
  bool in_flight_ = false;
  bool pending_record_ = false;
  bool pending_device_memory_ = false;
  uint32_t pending_count_ = 0;
  kiln_ik_result pending_{};

  // What info() reports from any thread.
  std::atomic<bool> is_active_{false};
  std::atomic<int32_t> active_device_{-1};
  std::atomic<uint32_t> active_batch_{0};
  std::atomic<uint64_t> device_bytes_{0};
  std::atomic<uint64_t> host_bytes_{0};
};

const IkSolver &self(const kiln_instance *instance) { return kiln::plugin::Instance::from<IkSolver>(instance); }
IkSolver &self(kiln_instance *instance) { return kiln::plugin::Instance::from<IkSolver>(instance); }

uint32_t ik_dof(const kiln_instance *instance) {
  (void)instance;
  return kDof;
}

kiln_status ik_info(const kiln_instance *instance, kiln_ik_info *info) {
  if (instance == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  return self(instance).info(info);
}

kiln_status ik_joint_info(const kiln_instance *instance, uint32_t index, kiln_ik_joint_info *info) {
  (void)instance;
  if (info == nullptr || info->struct_size == 0 || index >= static_cast<uint32_t>(kDof)) return KILN_ERR_INVALID_ARGUMENT;
  kiln_ik_joint_info full{};
  full.struct_size = info->struct_size;
  full.type = Chain::kJointTypes[index];
  full.lower = Chain::kLower[index];
  full.upper = Chain::kUpper[index];
  for (int k = 0; k < 3; ++k) full.axis[k] = Chain::kAxes[index][k];
  full.name_length = static_cast<uint32_t>(std::strlen(Chain::kJointNames[index]));
  copy_name(full.name, Chain::kJointNames[index]);
  std::memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
  return KILN_OK;
}

kiln_status ik_fk(const kiln_instance *instance, const float *q, uint32_t count, float *poses) {
  (void)instance;
  if (count == 0) return KILN_OK;
  if (q == nullptr || poses == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < count; ++i) {
    double qd[kDof], p[3], R[9];
    for (int j = 0; j < kDof; ++j) qd[j] = static_cast<double>(q[size_t{i} * kDof + static_cast<size_t>(j)]);
    Chain::fk<double>(qd, p, R);
    double w, x, y, z;
    kiln_ik::matrix_to_quaternion(R, w, x, y, z);
    float *out = poses + size_t{i} * KILN_IK_POSE_SIZE;
    const double values[KILN_IK_POSE_SIZE] = {p[0], p[1], p[2], w, x, y, z};
    for (int k = 0; k < KILN_IK_POSE_SIZE; ++k) out[k] = static_cast<float>(values[k]);
  }
  return KILN_OK;
}

kiln_status ik_solve_async(kiln_instance *instance, const kiln_ik_problem *problem, const kiln_ik_result *result,
                           char *message, size_t message_size) {
  kiln::plugin::Message text(message, message_size);
  if (instance == nullptr) {
    text.set("solve: instance is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  return self(instance).solve_async(problem, result, text);
}

int32_t ik_poll(kiln_instance *instance) { return instance == nullptr ? KILN_IK_IDLE : self(instance).poll(); }

kiln_status ik_wait(kiln_instance *instance, char *message, size_t message_size) {
  kiln::plugin::Message text(message, message_size);
  if (instance == nullptr) {
    text.set("wait: instance is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  return self(instance).wait(text);
}

kiln_status ik_solve(kiln_instance *instance, const kiln_ik_problem *problem, const kiln_ik_result *result,
                     char *message, size_t message_size) {
  const kiln_status status = ik_solve_async(instance, problem, result, message, message_size);
  if (status != KILN_OK) return status;
  return ik_wait(instance, message, message_size);
}

kiln_status ik_selftest(kiln_instance *instance, char *message, size_t message_size) noexcept {
  kiln::plugin::Message text(message, message_size);
  if (instance == nullptr) {
    text.set("selftest: instance is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  try {
    return self(instance).selftest(text);
  } catch (const std::bad_alloc &) {
    text.set("selftest: out of host memory");
    return KILN_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &error) {
    text.format("selftest: %s", error.what());
    return KILN_ERR_INTERNAL;
  } catch (...) {
    text.set("selftest: unknown exception");
    return KILN_ERR_INTERNAL;
  }
}

const kiln_ik_v1 IkSolver::table = {sizeof(kiln_ik_v1), &ik_dof,  &ik_info, &ik_joint_info, &ik_fk,
                                    &ik_solve_async,    &ik_poll, &ik_wait, &ik_solve};
const kiln_selftest_v1 IkSolver::selftest_table = {sizeof(kiln_selftest_v1), &ik_selftest};

}  // namespace

KILN_PLUGIN(IkSolver, KILN_IK_PLUGIN_ID, KILN_IK_PLUGIN_VERSION, KILN_IK_INTERFACE_ID, KILN_SELFTEST_INTERFACE_ID)
