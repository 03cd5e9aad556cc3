// Hot swap, the transaction (include/kiln/swap.hpp): what is served, each refused step leaving
// the serving version serving, state carried, shadow checks, rollback, grace periods.
#include <doctest/doctest.h>

#include <cstdlib>
#include <chrono>
#include <thread>

#include "support/plugin_store.hpp"
#include "support/swap_fixture.hpp"

using namespace kiln;
using namespace kiln::test;

namespace {

bool has_step(const SwapReport &report, const std::string &step, const std::string &detail = "") {
  for (const auto &s : report.steps) {
    if (s.step == step && s.detail.find(detail) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_SUITE("swap") {

TEST_CASE("swap: serves what consumer/name resolves to, and a swap serves the new version with the state carried") {
  SwapStore store;
  const std::string v1 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  SwapProbe probe(store.runtime, store.swap_options());
  SwapReader reader = probe.register_reader();
  CHECK(version_of(cycle(probe, reader, 3)) == 1);
  CHECK(cycle(probe, reader, 3) == 3001);
  CHECK(probe.resident().size() == 1);
  CHECK(std::string(probe.resident()[0].content_key) == v1);

  SwapReport unchanged = probe.swap();
  CHECK_FALSE(unchanged.swapped);
  CHECK(unchanged.to_key == v1);

  const std::string v2 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V2);
  const SwapReport report = probe.swap();
  CHECK(report.swapped);
  CHECK(report.from_key == v1);
  CHECK(report.to_key == v2);
  CHECK(report.serial == 2);
  CHECK_FALSE(report.was_resident);
  CHECK(has_step(report, "resolve", v2));
  CHECK(has_step(report, "load"));
  CHECK(has_step(report, "selftest", "passed"));
  CHECK(has_step(report, "state", "bytes carried"));
  CHECK(has_step(report, "grace", "every reader passed"));
  CHECK(report.state_bytes > 0);
  CHECK(report.retired.empty());  // keep_resident 2: v1 stays for a rollback
  reader.online();
  const auto served = probe.acquire(reader);
  CHECK(served->version(served.instance) == 2);
  CHECK(served->calls(served.instance) == 2);  // v1's two calls came with the state
  reader.offline();
  CHECK(cycle(probe, reader, 5) == 5002);
}

TEST_CASE("swap: a version refused at any step is never served and the serving one keeps serving") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  SwapProbe probe(store.runtime, store.swap_options());
  SwapReader reader = probe.register_reader();
  CHECK(cycle(probe, reader, 1) == 1001);

  struct Refusal {
    const char *file;
    const char *step;
    ErrorKind kind;
    const char *says;
    const char *hostile_mode;  // KILN_TEST_HOSTILE during the swap (tests/plugins/hostile.cpp)
  };
  const Refusal refusals[] = {
      {KILN_TEST_PLUGIN_SWAP_SELFTEST_FAILS, "selftest", ErrorKind::abi, "call(8) answered 8005, expected 8004", nullptr},
      {KILN_TEST_PLUGIN_SWAP_SELFTEST_THROWS, "selftest", ErrorKind::abi, "kiln.selftest/1 run", nullptr},
      {KILN_TEST_PLUGIN_SWAP_REFUSES_STATE, "state", ErrorKind::abi, "refuses on purpose", nullptr},
      {KILN_TEST_PLUGIN_SWAP_ACTIVATE_FAILS, "activate", ErrorKind::abi, "activate fails on purpose", nullptr},
      {KILN_TEST_PLUGIN_SWAP_NO_INTERFACE, "interface", ErrorKind::abi, "does not offer kiln.test.swap/1", nullptr},
      // Publish accepts it (it offers ABI 1); its negotiate then finds no version at load.
      {KILN_TEST_PLUGIN_HOSTILE, "load", ErrorKind::abi, "negotiat", "negotiate-unsupported"},
  };
  for (const Refusal &refusal : refusals) {
    CAPTURE(refusal.file);
    const std::string key = store.publish("probe", refusal.file);
    if (refusal.hostile_mode != nullptr) ::setenv("KILN_TEST_HOSTILE", refusal.hostile_mode, 1);
    struct Unset {
      ~Unset() { ::unsetenv("KILN_TEST_HOSTILE"); }
    } unset;
    try {
      probe.swap();
      FAIL("the swap to a broken version was not refused");
    } catch (const SwapError &error) {
      CHECK(error.step() == refusal.step);
      CHECK(error.kind() == refusal.kind);
      CHECK(has(error.what(), refusal.says));
      CHECK(has(error.what(), "still serves"));
      CHECK_FALSE(error.report().swapped);
    }
    CHECK(probe.resident().size() == 1);
    CHECK(version_of(cycle(probe, reader, 2)) == 1);
  }
  // Then a good version goes through.
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V2);
  CHECK(probe.swap().swapped);
  CHECK(version_of(cycle(probe, reader, 2)) == 2);
}

TEST_CASE("swap: the host's shadow check decides on recorded inputs") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("other", KILN_TEST_PLUGIN_SWAP_V2);
  SwapProbe probe(store.runtime, store.swap_options());
  SwapReader reader = probe.register_reader();
  // The comparator: answers must agree modulo the version digit.
  auto compare = [](std::uint64_t tolerance) {
    return [tolerance](const ServedVersion &serving, const ServedVersion &candidate) -> std::optional<std::string> {
      const auto *a = static_cast<const kiln_test_swap_v1 *>(serving.table);
      const auto *b = static_cast<const kiln_test_swap_v1 *>(candidate.table);
      for (std::uint64_t x = 0; x < 16; ++x) {
        const std::uint64_t ya = a->version(serving.instance) + x * 1000;
        const std::uint64_t yb = b->version(candidate.instance) + x * 1000;
        if ((ya > yb ? ya - yb : yb - ya) > tolerance) return "input " + std::to_string(x) + " differs";
      }
      return std::nullopt;
    };
  };
  SwapRequest strict;
  strict.name = "other";
  strict.shadow = compare(0);
  try {
    probe.swap(strict);
    FAIL("a shadow mismatch was not refused");
  } catch (const SwapError &error) {
    CHECK(error.step() == "shadow");
    CHECK(has(error.what(), "input 0 differs"));
  }
  CHECK(version_of(cycle(probe, reader, 1)) == 1);
  SwapRequest tolerant = strict;
  tolerant.shadow = compare(1);
  const SwapReport report = probe.swap(tolerant);
  CHECK(has_step(report, "shadow", "agreed"));
  CHECK(version_of(cycle(probe, reader, 1)) == 2);
}

TEST_CASE("swap: rollback serves the previous resident version without loading it") {
  SwapStore store;
  const std::string v1 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  const std::string v2 = store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapProbe probe(store.runtime, store.swap_options());
  SwapReader reader = probe.register_reader();
  reader.offline();  // cycle() goes online for each call
  SwapRequest to_b;
  to_b.name = "b";
  probe.swap(to_b);
  CHECK(version_of(cycle(probe, reader, 1)) == 2);
  const SwapReport back = probe.rollback();
  CHECK(back.swapped);
  CHECK(back.was_resident);
  CHECK(back.to_key == v1);
  CHECK(back.serial == 1);
  CHECK_FALSE(has_step(back, "load"));
  CHECK(has_step(back, "selftest", "passed"));
  CHECK(version_of(cycle(probe, reader, 1)) == 1);
  // And forward again: v2 is resident too.
  CHECK(probe.rollback().to_key == v2);

  SwapOptions single = store.swap_options();
  single.keep_resident = 1;
  SwapProbe lone(store.runtime, single);
  CHECK_THROWS_AS(lone.rollback(), NotFoundError);
  const SwapReport replaced = lone.swap(to_b);
  REQUIRE(replaced.retired.size() == 1);
  CHECK(replaced.retired[0].content_key == v1);
  CHECK(lone.resident().size() == 1);
}

TEST_CASE("swap: a reader that has not passed a quiescent point holds retirement back, never the swap") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapOptions options = store.swap_options();
  options.keep_resident = 1;
  options.grace_timeout = std::chrono::milliseconds(30);
  SwapProbe probe(store.runtime, options);
  SwapReader reader = probe.register_reader();
  const auto held = probe.acquire(reader);  // held across the swap: no quiescent()
  SwapRequest to_b;
  to_b.name = "b";
  const SwapReport report = probe.swap(to_b);
  CHECK(report.swapped);
  CHECK(report.retire_pending == 1);
  CHECK(report.retired.empty());
  CHECK(has_step(report, "grace", "retirement deferred"));
  CHECK(held->call(held.instance, 4) == 4001);  // still mapped and alive
  CHECK(probe.collect() == 1);
  reader.quiescent();
  CHECK(probe.collect() == 0);
  CHECK(version_of(cycle(probe, reader, 1)) == 2);

  // Swapping back to a resident version a reader still holds waits for that reader, and is
  // refused (the serving version stays) when it does not let go.
  {
    SwapOptions two = store.swap_options();
    two.grace_timeout = std::chrono::milliseconds(30);
    SwapProbe pair(store.runtime, two);  // keeps 2 resident
    SwapReader holder = pair.register_reader();
    const auto old = pair.acquire(holder);  // v1, held across the swaps
    REQUIRE(pair.swap(to_b).swapped);
    SwapRequest to_v1;
    to_v1.name = "probe";
    try {
      pair.swap(to_v1);
      FAIL("a swap back to a version a reader still holds went through");
    } catch (const SwapError &error) {
      CHECK(error.step() == "grace");
      CHECK(has(error.what(), "still holds version"));
    }
    CHECK(old->call(old.instance, 1) == 1001);
    holder.quiescent();
    CHECK(pair.swap(to_v1).swapped);
    CHECK(version_of(cycle(pair, holder, 1)) == 1);
  }

  // An offline reader is not waited for.
  reader.offline();
  SwapRequest back;
  back.name = "probe";
  const SwapReport second = probe.swap(back);
  CHECK(second.retire_pending == 0);
  CHECK(second.retired.size() == 1);
  reader.online();
  CHECK(version_of(cycle(probe, reader, 1)) == 1);
}

TEST_CASE("swap: bad options and too many readers are refused with the fix") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  SwapOptions options = store.swap_options();
  options.keep_resident = 0;
  CHECK_THROWS_AS(SwapProbe(store.runtime, options), UsageError);
  options = store.swap_options();
  options.interface_id.clear();
  CHECK_THROWS_AS(SwapProbe(store.runtime, options), UsageError);
  options = store.swap_options("missing");
  try {
    SwapProbe probe(store.runtime, options);
    FAIL("a missing artifact was served");
  } catch (const SwapError &error) {
    CHECK(error.step() == "resolve");
    CHECK(error.kind() == ErrorKind::not_found);
    CHECK(has(error.what(), "nothing is served"));
  }
  options = store.swap_options();
  options.max_readers = 2;
  SwapProbe probe(store.runtime, options);
  SwapReader a = probe.register_reader();
  {
    SwapReader b = probe.register_reader();
    CHECK_THROWS_AS(probe.register_reader(), UsageError);
  }
  SwapReader c = probe.register_reader();  // b's slot is free again
  CHECK(version_of(cycle(probe, c, 1)) == 1);
}

}  // TEST_SUITE
