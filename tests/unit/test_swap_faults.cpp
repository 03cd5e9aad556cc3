// Hot swap when memory runs out at the worst moments (support/failure_point.hpp): around
// publish, where a failure must leave either the old version serving or the new one serving
// with its grace period recorded, and in retirement, which must never leave a half-retired
// version behind.
#include <doctest/doctest.h>

#include <chrono>
#include <new>
#include <string>

#include "support/failure_point.hpp"
#include "support/plugin_store.hpp"
#include "support/swap_fixture.hpp"

using namespace kiln;
using namespace kiln::test;

namespace {

bool step_says(const SwapReport &report, const std::string &step, const std::string &detail) {
  for (const auto &s : report.steps) {
    if (s.step == step && s.detail.find(detail) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_SUITE("swap") {

TEST_CASE("swap: an allocation failure at publish refuses the swap with SwapError; the serving version serves on") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapOptions options = store.swap_options();
  options.keep_resident = 1;
  options.grace_timeout = std::chrono::milliseconds(30);
  SwapProbe probe(store.runtime, options);
  SwapReader reader = probe.register_reader();
  const auto held = probe.acquire(reader);  // serial 1, held across the swaps below

  {
    support::ArmedFailure failure("swap.publish");
    try {
      probe.swap(swap_to("b"));
      FAIL("the swap went through although publishing it failed");
    } catch (const SwapError &error) {
      CHECK(error.step() == "publish");
      CHECK(std::string(error.what()).find("still serves") != std::string::npos);
      CHECK_FALSE(error.report().swapped);
    } catch (const std::bad_alloc &) {
      FAIL("swap() threw std::bad_alloc, not SwapError (published: serial " << probe.acquire(reader).serial << ")");
    }
    CHECK(failure.fired());
  }
  CHECK(probe.acquire(reader).serial == 1);
  CHECK(probe.collect() == 0);
  CHECK(held->call(held.instance, 3) == 3001);  // never retired

  // The next swap goes through; the held version waits for its reader.
  const SwapReport report = probe.swap(swap_to("b"));
  CHECK(report.swapped);
  CHECK(report.retire_pending == 1);
  CHECK(held->call(held.instance, 4) == 4001);
  reader.quiescent();
  CHECK(probe.collect() == 0);
  CHECK(version_of(cycle(probe, reader, 1)) == 2);
}

TEST_CASE("swap: a retirement that fails stays pending and collect() retries it; the swap it followed stands") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapOptions options = store.swap_options();
  options.keep_resident = 1;
  SwapProbe probe(store.runtime, options);
  SwapReader reader = probe.register_reader();
  reader.offline();

  SwapReport report;
  {
    support::ArmedFailure failure("swap.retire");
    try {
      report = probe.swap(swap_to("b"));
    } catch (const std::exception &error) {
      FAIL_CHECK("swap() threw after publishing: " << error.what());
    }
    CHECK(failure.fired());
  }
  CHECK(report.swapped);
  CHECK(report.retired.empty());
  CHECK(report.retire_pending == 1);
  CHECK(step_says(report, "retire", "could not be retired"));
  CHECK(version_of(cycle(probe, reader, 1)) == 2);

  CHECK(probe.collect() == 0);  // retried: now retired
  CHECK(probe.collect() == 0);
  CHECK(version_of(cycle(probe, reader, 2)) == 2);
  const SwapReport back = probe.swap(swap_to("probe"));
  CHECK(back.retired.size() == 1);
  CHECK(version_of(cycle(probe, reader, 3)) == 1);
}

}  // TEST_SUITE
