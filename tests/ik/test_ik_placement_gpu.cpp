// kiln IK tests, suite "gpu": the iiwa14 IK plugin activated in a GPU partition (16 SMs, the
// highest stream priority; include/kiln/placement.hpp) and called from a thread that never made a
// CUDA context current answers exactly what an unplaced instance answers to the same targets;
// the split form, which runs in the primary context, refuses the partition by name.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <thread>

#include <kiln/ext/ik.h>
#include <kiln/placement.hpp>

#include "ik_split_support.hpp"
#include "ik_test_support.hpp"
#include "support/checks.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

namespace {

using kiln::test::ik::Solver;
namespace split_form = kiln::test::ik_split;

split_form::Outcome solve_on_fresh_thread(Solver &solver, uint32_t count, uint64_t seed) {
  split_form::Outcome outcome;
  std::thread control([&] { outcome = split_form::solve_random(*solver.ik, solver.instance.handle(), count, seed); });
  control.join();
  return outcome;
}

std::optional<std::string> no_gpu_or_nvrtc_to_refuse() {
  if (auto why = kiln::test::no_gpu()) return why;
  return kiln::test::no_nvrtc();
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("ik placement: a solve in a 16-SM partition at the highest priority equals the unplaced solve" *
            kiln::test::skip_if(kiln::test::no_gpu)) {
    constexpr uint32_t kTargets = 512;
    Solver unplaced(KILN_IK_PLUGIN_IIWA14, 0, kTargets, std::nullopt);
    Solver placed(KILN_IK_PLUGIN_IIWA14, 0, std::nullopt, std::nullopt);
    kiln::SmShare share;
    share.count = 16;
    const kiln::GpuSplit split = kiln::GpuPartition::split(0, share);
    kiln::ActivateOptions options;
    options.device = 0;
    options.max_batch = kTargets;
    options.partition = split.reserved;
    options.stream_priority = -1;  // every CUDA device offers at least 0 and -1
    placed.instance.activate(options);
    MESSAGE("partition: " << split.reserved->describe());

    const auto reference = solve_on_fresh_thread(unplaced, kTargets, 7);
    const auto in_partition = solve_on_fresh_thread(placed, kTargets, 7);
    MESSAGE("unplaced " << reference.good << "/" << kTargets << " good, placed " << in_partition.good << "/"
                        << kTargets);
    CHECK(reference.good >= kTargets * 95 / 100);
    // The same kernel on the same inputs: the SMs it ran on change nothing.
    CHECK(in_partition.q == reference.q);
    CHECK(in_partition.good == reference.good);
    CHECK(in_partition.iterations == reference.iterations);
  }

  TEST_CASE("ik placement: the split form refuses a partition, naming why" *
            kiln::test::skip_if(no_gpu_or_nvrtc_to_refuse)) {
    split_form::SplitStore store(std::nullopt, false);
    kiln::Module module = store.publish_cmake_host_part();
    kiln::Instance instance = module.create_instance();
    kiln::SmShare share;
    share.count = 16;
    kiln::ActivateOptions options;
    options.device = 0;
    options.max_batch = 8;
    options.partition = kiln::GpuPartition::split(0, share).reserved;
    kiln::ErrorKind kind = kiln::ErrorKind::other;
    const std::string message = kiln::test::error_of([&] { instance.activate(options); }, &kind);
    CHECK(kind == kiln::ErrorKind::abi);
    CHECK(kiln::test::contains(message, "cannot run in a GPU partition"));
    CHECK_FALSE(instance.active());
    options.partition.reset();
    options.stream_priority = -1;  // a priority it takes
    instance.activate(options);
    const auto outcome = split_form::solve_random(*split_form::ik_of(instance), instance.handle(), 8, 3);
    CHECK(outcome.good >= 7);
  }
}
