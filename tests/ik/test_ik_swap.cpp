// kiln IK tests: the IK plugin hot-swapped 20 times between iiwa14 and iiwa14-b while a thread
// solves, on the host path (activate(-1)) against a declared sm_90, so that it runs in CI; the same
// run on a device is in the "gpu" suite (test_ik_swap_gpu.cpp). See ik_swap_run.hpp.
#include <doctest/doctest.h>

#include "ik_swap_run.hpp"

using namespace kiln::test::ik;

TEST_CASE("ik swap: host path: 20 swaps between iiwa14 and iiwa14-b under a solving thread; every answer right, the "
          "state carried, memory back") {
  SwapRunOptions options;
  options.device = -1;
  const SwapRunResult run = swap_under_solves(options);
  check_swap_run(run, options.swaps);
  // One version reserves host_bytes (max_batch 16384 targets): a version leaked per swap would add
  // 20 of them. glibc may keep a freed block or two of that size in its heap (the mmap threshold
  // rises after a free), hence 4 blocks' worth of slack and not 0.
  const std::size_t block_kb = run.host_bytes / 1024;
  MESSAGE("RSS " << run.rss_before_kb << " kB before the 20 swaps, " << run.rss_after_kb << " kB after; one version's "
                 "host block " << block_kb << " kB");
  REQUIRE(block_kb > 64);  // else 20 leaked blocks would hide in the slack below
  CHECK(run.rss_after_kb <= run.rss_before_kb + 4 * block_kb + 1024);
}
