// Hot swap under load: control threads calling continuously while versions are swapped, loaded
// and unloaded; swaps from several threads; the Swappable destroyed while a swap is in flight;
// no growth in descriptors, mappings or memory over 1000 swaps.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "support/plugin_store.hpp"
#include "support/swap_fixture.hpp"

using namespace kiln;
using namespace kiln::test;

namespace {

// Swaps between swap/a and swap/b, `count` times.
void alternate(SwapProbe &probe, int count) {
  for (int i = 0; i < count; ++i) {
    SwapRequest request;
    request.name = i % 2 == 0 ? "b" : "a";
    const SwapReport report = probe.swap(request);
    REQUIRE(report.swapped);
  }
}

}  // namespace

TEST_SUITE("swap") {

TEST_CASE("swap: 8 control threads keep calling while versions are swapped and unloaded; each answer is one version's") {
  SwapStore store;
  store.publish("a", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapOptions options = store.swap_options("a");
  options.keep_resident = 1;  // every swap unloads the version it replaced
  SwapProbe probe(store.runtime, options);

  constexpr int kThreads = 8;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> calls{0}, wrong{0}, serial_went_back{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      SwapReader reader = probe.register_reader();
      std::uint64_t last_serial = 0;
      for (std::uint64_t x = 0; !stop.load(std::memory_order_relaxed); ++x) {
        const auto served = probe.acquire(reader);
        const std::uint64_t answer = served->call(served.instance, x + t);
        // The answer, the table's version and the serial must all name one version.
        if (answer != (x + t) * 1000 + served->version(served.instance) ||
            served->version(served.instance) != (served.serial % 2 == 1 ? 1u : 2u)) {
          wrong.fetch_add(1);
        }
        if (served.serial < last_serial) serial_went_back.fetch_add(1);
        last_serial = served.serial;
        reader.quiescent();
        calls.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  alternate(probe, 200);
  stop = true;
  for (auto &thread : threads) thread.join();
  CHECK(wrong == 0);
  CHECK(serial_went_back == 0);
  CHECK(calls > 200u);
}

TEST_CASE("swap: 1000 swaps with unloads leave descriptors, mappings and memory where they were") {
  SwapStore store;
  store.publish("a", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapOptions options = store.swap_options("a");
  options.keep_resident = 1;
  SwapProbe probe(store.runtime, options);
  SwapReader reader = probe.register_reader();
  reader.offline();  // cycle() goes online for each call
  alternate(probe, 50);  // warm: allocator pools, caches, the runtime's lazily built state
  const ProcessResources before = ProcessResources::now();
  std::size_t unloaded = 0, total = 0;
  for (int i = 0; i < 1000; ++i) {
    SwapRequest request;
    request.name = i % 2 == 0 ? "b" : "a";
    const SwapReport report = probe.swap(request);
    for (const auto &retired : report.retired) {
      ++total;
      if (retired.unloaded) ++unloaded;
    }
    cycle(probe, reader, 1);
  }
  const ProcessResources after = ProcessResources::now();
  CHECK(total == 1000);
  CHECK(unloaded == total);  // gone from /proc/self/maps every time
  CHECK(after.fds == before.fds);
  CHECK(after.mappings <= before.mappings + 2);
  MESSAGE("heap (" << before.heap_measure << ") before " << before.heap_kb << " kB, after 1000 swaps "
                   << after.heap_kb << " kB");
  CHECK(after.heap_kb < before.heap_kb + 2048);
  // Only the serving instance is alive in each file.
  const auto served = probe.acquire(reader);
  CHECK(served->live_instances() == 1);
  reader.quiescent();
}

TEST_CASE("swap: swaps asked from several threads at once run one after another") {
  SwapStore store;
  store.publish("a", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  store.publish("c", KILN_TEST_PLUGIN_SWAP_V3);
  SwapProbe probe(store.runtime, store.swap_options("a"));
  std::atomic<int> in_flight{0}, overlapped{0}, done{0};
  auto shadow = [&](const ServedVersion &, const ServedVersion &) -> std::optional<std::string> {
    if (in_flight.fetch_add(1) != 0) overlapped.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    in_flight.fetch_sub(1);
    return std::nullopt;
  };
  std::vector<std::thread> threads;
  for (const char *name : {"a", "b", "c", "b"}) {
    threads.emplace_back([&, name] {
      for (int i = 0; i < 5; ++i) {
        SwapRequest request;
        request.name = i % 2 == 0 ? name : "a";
        request.shadow = shadow;
        probe.swap(request);
        done.fetch_add(1);
      }
    });
  }
  for (auto &thread : threads) thread.join();
  CHECK(done == 20);
  CHECK(overlapped == 0);
  CHECK(probe.resident().size() == 2);
}

TEST_CASE("swap: destroying the Swappable while a swap is in flight waits for it and unloads everything") {
  SwapStore store;
  store.publish("a", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  std::optional<SwapProbe> probe(std::in_place, store.runtime, store.swap_options("a"));
  std::atomic<bool> shadow_running{false};
  std::optional<SwapReport> report;
  std::thread swapper([&] {
    SwapRequest request;
    request.name = "b";
    request.shadow = [&](const ServedVersion &, const ServedVersion &) -> std::optional<std::string> {
      shadow_running = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return std::nullopt;
    };
    report = probe->swap(request);
  });
  while (!shadow_running) std::this_thread::yield();
  probe.reset();  // waits for the swap, then retires both versions
  swapper.join();
  REQUIRE(report.has_value());
  CHECK(report->swapped);
  for (const char *name : {"a", "b"}) CHECK_FALSE(is_mapped(store.runtime.resolve("swap", name).file));
}

}  // TEST_SUITE
