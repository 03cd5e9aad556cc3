// Placement on a real GPU (include/kiln/placement.hpp), through the probe plugin
// (tests/plugins/placement_probe.cu) whose kernel notes the SM each block ran on: an instance
// activated in a partition runs on its SMs only, called from a thread that never made a context
// current or from one whose current context is the primary; its streams get the priority asked for; a plugin that leaves the partition at activate
// is refused; a Swappable serves versions activated in the partition; shares the device cannot
// give and priorities outside its range are refused. Suite "gpu": skipped visibly without a device.
#include <doctest/doctest.h>

#include <cuda.h>

#include <optional>
#include <string>
#include <thread>

#include <kiln/placement.hpp>
#include <kiln/runtime.hpp>
#include <kiln/swap.hpp>

#include "device/contexts.hpp"
#include "device/driver.hpp"
#include "plugins/placement_probe.h"
#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/plugin_store.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::contains;
using kiln::test::TempDir;

namespace {

std::optional<std::string> no_placement_probe() {
  if (const auto none = kiln::test::no_gpu()) return none;
  if (std::string(KILN_TEST_PLUGIN_PLACEMENT).empty()) return std::string("the placement probe needs nvcc");
  return std::nullopt;
}

struct ProbeRun {
  uint32_t distinct_sms = 0;
  int32_t priority = 0;
  uint32_t sm_count = 0;
};

enum class ThreadContext { none, primary };

// One run of the probe's kernel from a fresh thread with no CUDA context, or with device 0's
// primary context current (what a plugin's cudaSetDevice on the control thread leaves): the
// instance's stream alone must decide where the kernel runs.
ProbeRun run_probe(const Instance &instance, uint32_t blocks, ThreadContext context = ThreadContext::none) {
  const auto *probe = instance.interface<kiln_test_placement_v1>(KILN_TEST_PLACEMENT_INTERFACE_ID);
  REQUIRE(probe != nullptr);
  device::Driver &driver = device::Driver::instance();
  auto retain = driver.proc_as<decltype(&::cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  auto release = driver.proc_as<decltype(&::cuDevicePrimaryCtxRelease)>("cuDevicePrimaryCtxRelease");
  auto set_current = driver.proc_as<decltype(&::cuCtxSetCurrent)>("cuCtxSetCurrent");
  REQUIRE((retain && release && set_current));
  ProbeRun out;
  kiln_status status = KILN_OK;
  CUresult made_current = CUDA_SUCCESS;
  char message[256] = "";
  std::thread control([&] {
    CUdevice device = 0;
    CUcontext primary = nullptr;
    if (context == ThreadContext::primary) {
      made_current = driver.api().device_get(&device, 0);
      if (made_current == CUDA_SUCCESS) made_current = retain(&primary, device);
      if (made_current == CUDA_SUCCESS) made_current = set_current(primary);
      if (made_current != CUDA_SUCCESS) return;
    }
    status = probe->run(instance.handle(), blocks, &out.distinct_sms, &out.priority, &out.sm_count, message,
                        sizeof message);
    if (context == ThreadContext::primary) {
      set_current(nullptr);
      release(device);
    }
  });
  control.join();
  REQUIRE(made_current == CUDA_SUCCESS);
  REQUIRE_MESSAGE(status == KILN_OK, message);
  return out;
}

struct ProbeStore {
  ProbeStore() : runtime(kiln::test::store_options(dir, std::nullopt)) {
    kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_PLACEMENT, "placement");
  }
  Module load() { return runtime.load("tests", "placement"); }
  TempDir dir;
  Runtime runtime;
};

// Device 0's highest stream priority.
int greatest_priority() { return device::stream_priority_range(0).greatest; }

int device_sms() {
  device::Driver &driver = device::Driver::instance();
  CUdevice device = 0;
  int sms = 0;
  REQUIRE(driver.api().device_get(&device, 0) == CUDA_SUCCESS);
  REQUIRE(driver.api().device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) == CUDA_SUCCESS);
  return sms;
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("gpu placement: a partition's instance runs on its SMs only, from a thread with no context" *
            kiln::test::skip_if(no_placement_probe)) {
    ProbeStore store;
    Module module = store.load();
    SmShare share;
    share.count = 16;
    const GpuSplit split = GpuPartition::split(0, share);
    REQUIRE(split.reserved);
    REQUIRE(split.rest);
    const unsigned sms = split.reserved->sm_count();
    MESSAGE("partition: " << split.reserved->describe() << "; rest " << split.rest->sm_count());
    CHECK(sms >= 16);
    CHECK(sms + split.rest->sm_count() == split.reserved->device_sm_count());
    CHECK(static_cast<int>(split.reserved->device_sm_count()) == device_sms());
    CHECK(contains(split.reserved->describe(), "SMs of device 0"));

    Instance placed = module.create_instance();
    ActivateOptions options;
    options.device = 0;
    options.partition = split.reserved;
    placed.activate(options);
    const ProbeRun in_partition = run_probe(placed, 2048);
    MESSAGE("in the partition: " << in_partition.distinct_sms << " distinct SMs");
    CHECK(in_partition.distinct_sms <= sms);
    CHECK(in_partition.distinct_sms >= sms / 2);  // it did spread over the share
    CHECK(in_partition.sm_count == sms);
    const ProbeRun from_primary = run_probe(placed, 2048, ThreadContext::primary);
    MESSAGE("in the partition, called with the primary context current: " << from_primary.distinct_sms);
    CHECK(from_primary.distinct_sms <= sms);

    Instance whole = module.create_instance();
    whole.activate(0, 1);
    const ProbeRun unplaced = run_probe(whole, 2048);
    MESSAGE("unplaced: " << unplaced.distinct_sms << " distinct SMs");
    CHECK(unplaced.distinct_sms > sms);
    CHECK(unplaced.sm_count == 0);

    // Deactivated and activated again, in the same partition: still confined.
    placed.deactivate();
    placed.activate(options);
    CHECK(run_probe(placed, 2048).distinct_sms <= sms);
  }

  TEST_CASE("gpu placement: a fraction of the device, and the stream priority asked for" *
            kiln::test::skip_if(no_placement_probe)) {
    ProbeStore store;
    Module module = store.load();
    SmShare half;
    half.fraction = 0.5;
    const GpuSplit split = GpuPartition::split(0, half);
    CHECK(split.reserved->sm_count() * 2 >= split.reserved->device_sm_count());
    Instance instance = module.create_instance();
    ActivateOptions options;
    options.device = 0;
    options.partition = split.reserved;
    options.stream_priority = greatest_priority();
    instance.activate(options);
    const ProbeRun run = run_probe(instance, 2048);
    CHECK(run.priority == greatest_priority());
    CHECK(run.distinct_sms <= split.reserved->sm_count());

    // A priority alone, no partition.
    Instance prioritised = module.create_instance();
    ActivateOptions priority_only;
    priority_only.device = 0;
    priority_only.stream_priority = greatest_priority();
    prioritised.activate(priority_only);
    CHECK(run_probe(prioritised, 64).priority == greatest_priority());
  }

  TEST_CASE("gpu placement: a plugin that leaves the partition at activate is refused and left inactive" *
            kiln::test::skip_if(no_placement_probe)) {
    ProbeStore store;
    Module module = store.load();
    SmShare share;
    share.count = 8;
    const GpuSplit split = GpuPartition::split(0, share);
    Instance instance = module.create_instance();
    ActivateOptions options;
    options.device = 0;
    options.partition = split.reserved;
    {
      kiln::test::ScopedEnv mode("KILN_TEST_PLACEMENT_PROBE", std::string("set-device"));
      ErrorKind kind = ErrorKind::other;
      const std::string message = kiln::test::error_of([&] { instance.activate(options); }, &kind);
      CHECK(kind == ErrorKind::abi);
      CHECK(contains(message, "left its partition"));
      CHECK(contains(message, "KILN_ACTIVATE_IN_CURRENT_CONTEXT"));
    }
    CHECK_FALSE(instance.active());
    instance.activate(options);  // the same instance, behaving: accepted
    CHECK(run_probe(instance, 1024).distinct_sms <= split.reserved->sm_count());
  }

  TEST_CASE("gpu placement: a Swappable activates every version in its partition" *
            kiln::test::skip_if(no_placement_probe)) {
    ProbeStore store;
    SmShare share;
    share.count = 16;
    const GpuSplit split = GpuPartition::split(0, share);
    SwapOptions options;
    options.consumer = "tests";
    options.name = "placement";
    options.interface_id = KILN_TEST_PLACEMENT_INTERFACE_ID;
    options.device = 0;
    options.partition = split.reserved;
    options.stream_priority = greatest_priority();
    // The first version is prepared (created, activated, self-tested) as every swap's is.
    Swappable<kiln_test_placement_v1> served(store.runtime, options);
    SwapReader reader = served.register_reader();
    const auto version = served.acquire(reader);
    ProbeRun run;
    char message[256] = "";
    std::thread control([&] {
      REQUIRE(version.table->run(version.instance, 2048, &run.distinct_sms, &run.priority, &run.sm_count, message,
                                 sizeof message) == KILN_OK);
    });
    control.join();
    reader.quiescent();
    CHECK(run.distinct_sms <= split.reserved->sm_count());
    CHECK(run.priority == greatest_priority());
  }

  TEST_CASE("gpu placement: shares the device cannot give and priorities outside its range are refused" *
            kiln::test::skip_if(no_placement_probe)) {
    SmShare too_many;
    too_many.count = static_cast<unsigned>(device_sms()) + 8;
    ErrorKind kind = ErrorKind::other;
    std::string message = kiln::test::error_of([&] { GpuPartition::split(0, too_many); }, &kind);
    CHECK(kind == ErrorKind::usage);
    CHECK(contains(message, "has " + std::to_string(device_sms()) + " SMs"));
    message = kiln::test::error_of([&] { GpuPartition::split(99, SmShare{8, 0}); }, &kind);
    CHECK(kind == ErrorKind::usage);
    CHECK(contains(message, "no device 99"));

    ProbeStore store;
    Module module = store.load();
    Instance instance = module.create_instance();
    ActivateOptions options;
    options.device = 0;
    options.stream_priority = greatest_priority() - 10;
    message = kiln::test::error_of([&] { instance.activate(options); }, &kind);
    CHECK(kind == ErrorKind::usage);
    CHECK(contains(message, "outside device 0's range"));
    options.stream_priority = 1;
    message = kiln::test::error_of([&] { instance.activate(options); }, &kind);
    CHECK(kind == ErrorKind::usage);
    CHECK_FALSE(instance.active());
    // A partition of one device for an activate on another.
    const GpuSplit split = GpuPartition::split(0, SmShare{8, 0});
    options.stream_priority = 0;
    options.device = 1;
    options.partition = split.reserved;
    message = kiln::test::error_of([&] { instance.activate(options); }, &kind);
    CHECK(kind == ErrorKind::usage);
    CHECK(contains(message, "a partition of another device"));
  }
}
