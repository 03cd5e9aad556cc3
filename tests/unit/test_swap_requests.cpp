// The cross-process trigger's answers at its edges: `kiln swap --to KEY` is acknowledged only by
// a watcher serving KEY (requests coalesce, watchers start late), and a forked process's bumps
// are never lost to the lock it shares with its parent.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/plugin_store.hpp"
#include "support/swap_fixture.hpp"
#include "swap/generations.hpp"

using namespace kiln;
using namespace kiln::test;

namespace {

SwapOptions watching_options(const SwapStore &store, std::chrono::milliseconds interval) {
  SwapOptions options = store.swap_options();
  options.watch = true;
  options.watch_interval = interval;
  return options;
}

// Every acknowledgement of a --to KEY request must be the watcher serving KEY, or refusing it.
std::string acknowledged_wrongly(const SwapRequestResult &result) {
  std::string wrong;
  for (const auto &ack : result.acknowledged) {
    if (ack.outcome == "refused" || (ack.outcome != "watching" && ack.note == *result.content_key)) continue;
    wrong += "pid " + std::to_string(ack.pid) + ": " + ack.outcome + " " + ack.note + " (generation " +
             std::to_string(ack.generation) + "); ";
  }
  return wrong;
}

}  // namespace

TEST_SUITE("swap") {

TEST_CASE("trigger: kiln swap --to KEY followed by a plain bump before the watcher looked is not acknowledged "
          "as served") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  const std::string k2 = store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapProbe probe(store.runtime, watching_options(store, std::chrono::milliseconds(500)));
  SwapReader reader = probe.register_reader();

  // Both land before the watcher's first look (500 ms): it sees the plain one, the latest.
  SwapRequestResult pinned = request_swap(store.runtime, "swap", "probe", k2);
  const SwapRequestResult plain = request_swap(store.runtime, "swap", "probe");
  REQUIRE(plain.generation == pinned.generation + 1);
  wait_for_acknowledgements(store.runtime, pinned, std::chrono::seconds(5));
  CHECK(version_of(cycle(probe, reader, 1)) == 1);  // k1 still serves
  CHECK_MESSAGE(acknowledged_wrongly(pinned).empty(), acknowledged_wrongly(pinned));
}

TEST_CASE("trigger: a watcher that starts after kiln swap --to KEY does not acknowledge it") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  const std::string k2 = store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapRequestResult pinned = request_swap(store.runtime, "swap", "probe", k2);
  SwapProbe probe(store.runtime, watching_options(store, std::chrono::milliseconds(5)));
  SwapReader reader = probe.register_reader();
  wait_for_acknowledgements(store.runtime, pinned, std::chrono::milliseconds(300));
  CHECK(version_of(cycle(probe, reader, 1)) == 1);  // it serves what the name resolves to
  CHECK_MESSAGE(acknowledged_wrongly(pinned).empty(), acknowledged_wrongly(pinned));
}

TEST_CASE("trigger: bumps from a forked child through its parent's table all count") {
  TempDir dir;
  auto table = swap::GenerationTable::open((dir / "cache").string(), {});
  const auto slot = table->slot("c", "forked");
  REQUIRE(slot);
  const std::uint64_t start = table->bump("c", "forked");
  constexpr int kBumps = 4000;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int failed = 0;
    for (int i = 0; i < kBumps; ++i) failed += table->bump("c", "forked") == 0;
    ::_exit(failed == 0 ? 0 : 1);
  }
  for (int i = 0; i < kBumps; ++i) table->bump("c", "forked");
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::uint64_t counted = table->poll(*slot).value().generation - start;
  const std::uint64_t lost = 2 * kBumps - counted;
  CHECK_MESSAGE(lost == 0, lost << " of " << 2 * kBumps << " bumps lost");
}

}  // TEST_SUITE
