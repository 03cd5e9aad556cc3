// Hot swap's readers at the edges of their protocol: a quiescent() on a reader that is offline
// (a store-buffering litmus test on the reader functions themselves), and a Swappable destroyed
// while control threads keep cycling.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "support/plugin_store.hpp"
#include "support/swap_fixture.hpp"
#include "swap/domain.hpp"

using namespace kiln;
using namespace kiln::test;

TEST_SUITE("swap") {

// A store-buffering litmus test on the reader functions themselves, free-running: the writer
// publishes version i, starts a grace period and, when every reader passed it, records that
// nobody holds a version before i. The reader goes offline, announces a quiescent state with
// quiescent() (which must bring it online) and reads the published version k. A reader holding k
// while the writer recorded that nobody holds k is the bug: a retired version in use.
TEST_CASE("swap: quiescent() on an offline reader brings it online so that no grace period passes under it") {
  constexpr std::int64_t kVersions = 1 << 18;  // published once each per round
  std::vector<ServedVersion> versions(kVersions);
  long rounds = 0;
  std::int64_t announcements = 0, violations = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < deadline) {
    swap_detail::Domain domain(1);
    swap_detail::ReaderSlot *slot = domain.claim();
    REQUIRE(slot != nullptr);
    domain.publish(&versions[0]);
    std::atomic<std::int64_t> unused_before{0};  // no reader holds a version below this index
    std::atomic<bool> stop{false};
    std::thread reader([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        swap_detail::reader_offline(*slot);
        swap_detail::reader_quiescent(*slot, domain);
        const std::int64_t held = domain.current.load(std::memory_order_acquire) - versions.data();
        // Held a while (the writer needs a moment to see the slot and record its verdict).
        for (int look = 0; look < 200; ++look) {
          if (held < unused_before.load(std::memory_order_acquire)) {
            ++violations;
            break;
          }
        }
        ++announcements;
      }
    });
    for (std::int64_t i = 1; i < kVersions; ++i) {
      domain.publish(&versions[static_cast<std::size_t>(i)]);
      if (domain.passed(domain.advance())) unused_before.store(i, std::memory_order_release);
    }
    stop = true;
    reader.join();
    ++rounds;
  }
  INFO(rounds << " rounds of " << kVersions << " versions, " << announcements << " announcements");
  CHECK(violations == 0);
}

TEST_CASE("swap: destroying the Swappable while control threads keep cycling: they see the retired state, "
          "never a freed version") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  std::optional<SwapProbe> probe;
  probe.emplace(store.runtime, store.swap_options());
  SwapProbe *swappable = &*probe;

  constexpr int kThreads = 4;
  std::atomic<int> cycling{0}, saw_retired{0};
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, reader = swappable->register_reader()]() mutable {
      cycling.fetch_add(1);
      for (std::uint64_t x = 0;; ++x) {
        const auto served = swappable->acquire(reader);
        if (served.table == nullptr) {  // retired: the Swappable is being (or was) destroyed
          if (served.serial != 0) wrong.fetch_add(1);
          saw_retired.fetch_add(1);
          break;
        }
        if (served->call(served.instance, x) != x * 1000 + 1) wrong.fetch_add(1);
        reader.quiescent();
      }
      reader.offline();
    });
  }
  while (cycling.load() != kThreads) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  probe.reset();
  for (auto &thread : threads) thread.join();
  CHECK(saw_retired == kThreads);
  CHECK(wrong == 0);
}

TEST_CASE("swap: swap() on a control thread whose reader is online does not wait for that reader") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapOptions options = store.swap_options();
  options.keep_resident = 1;
  options.grace_timeout = std::chrono::milliseconds(2000);
  SwapProbe probe(store.runtime, options);
  SwapReader reader = probe.register_reader();
  reader.online();
  auto served = probe.acquire(reader);
  CHECK(served->call(served.instance, 1) == 1001);
  reader.quiescent();  // holds nothing: the swap on this thread is a quiescent point for it

  SwapRequest to_b;
  to_b.name = "b";
  const auto start = std::chrono::steady_clock::now();
  const SwapReport report = probe.swap(to_b);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(report.swapped);
  CHECK(report.retire_pending == 0);
  CHECK(report.retired.size() == 1);
  CHECK(waited < std::chrono::milliseconds(1000));
  served = probe.acquire(reader);  // online again after the swap
  CHECK(served->call(served.instance, 2) == 2002);
  reader.quiescent();
}

TEST_CASE("swap: a reader whose thread exited while online is named in the report as holding the grace period") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapOptions options = store.swap_options();
  options.keep_resident = 1;
  options.grace_timeout = std::chrono::milliseconds(50);
  SwapProbe probe(store.runtime, options);
  SwapReader reader = probe.register_reader();
  std::thread([&] {
    reader.online();
    const auto served = probe.acquire(reader);
    (void)served->call(served.instance, 1);
    reader.quiescent();
  }).join();  // gone, its reader still online

  SwapRequest to_b;
  to_b.name = "b";
  const SwapReport report = probe.swap(to_b);
  CHECK(report.swapped);
  CHECK(report.retire_pending == 1);
  std::string grace;
  for (const auto &step : report.steps) {
    if (step.step == "grace") grace = step.detail;
  }
  INFO(grace);
  CHECK(grace.find("has exited with the reader online") != std::string::npos);
  reader.offline();
  CHECK(probe.collect() == 0);
}

}  // TEST_SUITE
