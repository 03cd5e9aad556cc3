// Hot swap deadlines (SwapOptions::deadlines): a plugin call that hangs (self-test, activate)
// fails the swap with a timeout naming the step while a control loop keeps cycling on the
// serving version; the stuck version is quarantined, a later swap still works, and the version
// is retired once its call returns. A slow call within its deadline swaps. Each hang is released
// by the test (the probe waits while a file exists), so no thread is left inside a plugin.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/runtime.hpp>
#include <kiln/swap.hpp>

#include "support/fixtures.hpp"
#include "support/swap_fixture.hpp"

using namespace kiln;
using namespace kiln::test;

namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` every millisecond for up to `cap`; whether it became true. The cap only bounds a
// failing test: the tests assert on counts and outcomes, never on how long something took.
template <class F>
bool eventually(F done, std::chrono::milliseconds cap = std::chrono::milliseconds(10000)) {
  const auto give_up = Clock::now() + cap;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// The file a hanging probe call waits on (KILN_TEST_SWAP_HOLD), and the mark it leaves on entry.
// Released at scope exit at the latest, so a failing test leaves no thread inside the plugin.
struct Hold {
  fs::path file;
  ScopedEnv env;
  explicit Hold(const TempDir &dir) : file(dir / "hold"), env("KILN_TEST_SWAP_HOLD", file.string()) {
    write_text(file, "held");
  }
  ~Hold() { release(); }
  bool entered() const { return fs::exists(file.string() + ".entered"); }
  bool left() const { return fs::exists(file.string() + ".left"); }  // the call returned
  void release() {
    boost::system::error_code ignored;
    fs::remove(file, ignored);
  }
};

// A control thread cycling acquire -> call -> quiescent at about 1 kHz: counts its cycles, notes
// each version that answered (bit v of `seen`) and the last one, and counts answers that are not
// the served table's own.
struct Loop {
  SwapProbe &probe;
  std::atomic<std::uint64_t> cycles{0};
  std::atomic<std::uint64_t> seen{0};
  std::atomic<std::uint64_t> last_version{0};
  std::atomic<std::uint64_t> wrong{0};
  std::atomic<bool> stop{false};
  std::thread thread;

  explicit Loop(SwapProbe &swapped) : probe(swapped) {
    SwapReader reader = probe.register_reader();  // registered before the constructor returns
    thread = std::thread([this, reader = std::move(reader)]() mutable {
      reader.online();
      for (std::uint64_t x = 0; !stop.load(); ++x) {
        const auto served = probe.acquire(reader);
        const std::uint64_t answer = served->call(served.instance, x);
        const std::uint64_t version = served->version(served.instance);
        if (answer != x * 1000 + version) wrong.fetch_add(1);
        seen.fetch_or(std::uint64_t{1} << (version % 64));
        last_version.store(version);
        reader.quiescent();
        cycles.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      reader.offline();
    });
  }
  // Waits for 10 more cycles; the version the last of them got.
  std::uint64_t settled_version() {
    const std::uint64_t from = cycles.load();
    REQUIRE(eventually([&] { return cycles.load() >= from + 10; }));
    return last_version.load();
  }
  ~Loop() {
    stop = true;
    thread.join();
  }
};

// Runs a swap on a setup thread of its own; its error, if it threw one.
std::future<std::optional<SwapError>> swap_async(SwapProbe &probe, const std::string &name) {
  return std::async(std::launch::async, [&probe, name]() -> std::optional<SwapError> {
    try {
      probe.swap(swap_to(name));
      return std::nullopt;
    } catch (const SwapError &error) {
      return error;
    }
  });
}

bool ready(const std::future<std::optional<SwapError>> &swapping) {
  return swapping.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// While a swap is inside the hanging call, the loop keeps cycling: 50 cycles are counted after
// the probe marked its entry and before the swap returned (the deadline is 30 times as long).
void check_loop_runs_during_the_hang(Loop &loop, const Hold &hold, const std::future<std::optional<SwapError>> &swapping) {
  REQUIRE_MESSAGE(eventually([&] { return hold.entered(); }), "the swap never reached the hanging call");
  const std::uint64_t at_entry = loop.cycles.load();
  REQUIRE(eventually([&] { return loop.cycles.load() >= at_entry + 50 || ready(swapping); }));
  CHECK_MESSAGE(!ready(swapping), "the swap returned before the loop cycled 50 times inside its hang");
  CHECK(loop.cycles.load() >= at_entry + 50);
}

// Self-test or activate hangs: the swap times out naming the step; the loop never stalls and
// keeps getting v1; the stuck version is quarantined; a swap to v2 works meanwhile; released, the
// stuck version is retired by collect().
void check_hanging(const char *step, const std::string &plugin, std::chrono::milliseconds SwapDeadlines::*deadline) {
  SwapStore store;
  Hold hold(store.dir);
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  const std::string stuck_key = store.publish("stuck", plugin);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  SwapOptions options = store.swap_options();
  options.deadlines.*deadline = std::chrono::milliseconds(1500);
  SwapProbe probe(store.runtime, options);
  Loop loop(probe);

  auto swapping = swap_async(probe, "stuck");
  check_loop_runs_during_the_hang(loop, hold, swapping);
  const std::optional<SwapError> error = swapping.get();
  REQUIRE_MESSAGE(error.has_value(), "the swap to a version whose " << step << " hangs went through");
  CHECK(error->step() == step);
  CHECK(error->timed_out());
  CHECK(error->deadline() == std::chrono::milliseconds(1500));
  CHECK(error->kind() == ErrorKind::timeout);
  CHECK(error->exit_code() == 8);
  const std::string what = error->what();
  CAPTURE(what);
  CHECK(what.find("timed out after 1500 ms") != std::string::npos);
  CHECK(what.find(std::string("SwapOptions::deadlines.") + step) != std::string::npos);
  CHECK(what.find(stuck_key) != std::string::npos);
  CHECK(what.find("still serves") != std::string::npos);
  CHECK_FALSE(error->report().swapped);
  CHECK(error->report().quarantined == 1);
  CHECK_FALSE(hold.left());  // still inside: the swap did not wait for it

  // v1 serves on, the loop only ever got v1, and the stuck version is not resident.
  CHECK(loop.settled_version() == 1);
  CHECK(loop.seen.load() == (std::uint64_t{1} << 1));
  CHECK(loop.wrong.load() == 0);
  CHECK(probe.resident().size() == 1);
  CHECK(probe.resident()[0].serial == 1);
  CHECK(probe.collect() == 1);  // quarantined; collect() does not wait for it

  // A later swap works while the stuck call still runs.
  const SwapReport report = probe.swap(swap_to("b"));
  CHECK(report.swapped);
  CHECK(report.quarantined == 1);
  CHECK(loop.settled_version() == 2);
  CHECK(loop.seen.load() == ((std::uint64_t{1} << 1) | (std::uint64_t{1} << 2)));  // never the stuck one
  CHECK(loop.wrong.load() == 0);
  CHECK_FALSE(hold.left());

  // Released, the call returns and the quarantined version is retired.
  hold.release();
  CHECK(eventually([&] { return probe.collect() == 0; }));
  CHECK(hold.left());
}

}  // namespace

TEST_SUITE("swap") {

TEST_CASE("deadlines: a hanging self-test fails the swap at step selftest with a timeout; the loop keeps cycling on "
          "the serving version; the stuck version is quarantined, then retired once it returns") {
  check_hanging("selftest", KILN_TEST_PLUGIN_SWAP_SELFTEST_HANGS, &SwapDeadlines::selftest);
}

TEST_CASE("deadlines: a hanging activate fails the swap at step activate with a timeout; the loop keeps cycling; a "
          "later swap works while the stuck version is quarantined") {
  check_hanging("activate", KILN_TEST_PLUGIN_SWAP_ACTIVATE_HANGS, &SwapDeadlines::activate);
}

TEST_CASE("deadlines: an activate taking 2 s within a 4 s deadline swaps, and the loop keeps cycling meanwhile") {
  SwapStore store;
  Hold hold(store.dir);  // only its entry mark: the slow activate does not wait on the file
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("slow", KILN_TEST_PLUGIN_SWAP_ACTIVATE_SLOW);
  SwapOptions options = store.swap_options();
  options.deadlines.activate = std::chrono::milliseconds(4000);
  SwapProbe probe(store.runtime, options);
  Loop loop(probe);

  auto swapping = swap_async(probe, "slow");
  check_loop_runs_during_the_hang(loop, hold, swapping);
  CHECK(loop.last_version.load() == 1);  // still v1 while activate runs
  const std::optional<SwapError> error = swapping.get();
  CHECK_MESSAGE(!error.has_value(), (error ? error->what() : ""));
  CHECK(probe.resident()[0].serial == 2);
  CHECK(loop.settled_version() == 11);
  CHECK(loop.wrong.load() == 0);
}

TEST_CASE("deadlines: a hanging shadow check fails the swap at step shadow; the serving version serves on and is "
          "not asked for its state until the check returned; then swaps carry state again") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  const std::string b = store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  store.publish("c", KILN_TEST_PLUGIN_SWAP_V3);
  SwapOptions options = store.swap_options();
  options.deadlines.shadow = std::chrono::milliseconds(300);
  SwapProbe probe(store.runtime, options);
  Loop loop(probe);

  // Shared, not referenced: the check outlives the swap that started it.
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto returned = std::make_shared<std::atomic<bool>>(false);
  SwapRequest request = swap_to("b");
  request.shadow = [release, returned](const ServedVersion &, const ServedVersion &) -> std::optional<std::string> {
    const auto give_up = Clock::now() + std::chrono::seconds(60);
    while (!release->load() && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    returned->store(true);
    return std::nullopt;
  };
  try {
    probe.swap(request);
    FAIL("a swap whose shadow check hangs went through");
  } catch (const SwapError &error) {
    CHECK(error.step() == "shadow");
    CHECK(error.timed_out());
    CHECK(std::string(error.what()).find(b) != std::string::npos);
    CHECK(error.report().quarantined == 1);
  }
  CHECK(loop.settled_version() == 1);

  // The serving version may still be inside the check: export_state is not called on it.
  try {
    probe.swap(swap_to("c"));
    FAIL("state was exported from a version a timed-out call may still be inside of");
  } catch (const SwapError &error) {
    CHECK(error.step() == "state");
    CHECK(error.timed_out());
    CHECK(std::string(error.what()).find("still inside an earlier call") != std::string::npos);
  }
  CHECK(loop.settled_version() == 1);
  CHECK(probe.collect() == 1);

  release->store(true);
  REQUIRE(eventually([&] { return returned->load(); }));
  CHECK(eventually([&] { return probe.collect() == 0; }));
  const SwapReport report = probe.swap(swap_to("c"));
  CHECK(report.swapped);
  CHECK(report.state_bytes > 0);
  CHECK(loop.settled_version() == 3);
  CHECK(loop.wrong.load() == 0);
}

TEST_CASE("deadlines: destroying the Swappable while a self-test hangs returns; the stuck version is kept for the "
          "process's life") {
  SwapStore store;
  Hold hold(store.dir);
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("stuck", KILN_TEST_PLUGIN_SWAP_SELFTEST_HANGS);
  SwapOptions options = store.swap_options();
  options.deadlines.selftest = std::chrono::milliseconds(300);
  auto probe = std::make_unique<SwapProbe>(store.runtime, options);
  CHECK_THROWS_AS(probe->swap(swap_to("stuck")), SwapError);
  REQUIRE(hold.entered());
  auto destroying = std::async(std::launch::async, [&] { probe.reset(); });
  const bool returned = destroying.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  CHECK_MESSAGE(returned, "~Swappable waited for a call stuck in plugin code");
  hold.release();  // the stuck call returns into a version that was kept, not unloaded
  destroying.get();
  CHECK(eventually([&] { return hold.left(); }));
}

TEST_CASE("deadlines: a Swappable whose first version's self-test hangs throws the timeout; the version is kept") {
  SwapStore store;
  Hold hold(store.dir);
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_SELFTEST_HANGS);
  SwapOptions options = store.swap_options();
  options.deadlines.selftest = std::chrono::milliseconds(300);
  try {
    SwapProbe probe(store.runtime, options);
    FAIL("a Swappable was made from a version whose self-test never returned");
  } catch (const SwapError &error) {
    CHECK(error.step() == "selftest");
    CHECK(error.timed_out());
    CHECK(std::string(error.what()).find("nothing is served") != std::string::npos);
  }
  CHECK_FALSE(hold.left());
  hold.release();  // returns into the kept version, not into unloaded code
  CHECK(eventually([&] { return hold.left(); }));
}

TEST_CASE("deadlines: a deadline of 0 is none: the call runs on the swapping thread and the swap waits for it") {
  SwapStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("slow", KILN_TEST_PLUGIN_SWAP_ACTIVATE_SLOW);
  SwapOptions options = store.swap_options();
  options.deadlines.activate = std::chrono::milliseconds(0);
  SwapProbe probe(store.runtime, options);
  const SwapReport report = probe.swap(swap_to("slow"));
  CHECK(report.swapped);
  CHECK(report.quarantined == 0);
}

TEST_CASE("deadlines: kiln swap reports a watcher's timed-out swap as refused with the step and the deadline, exit 8") {
  SwapStore store;
  Hold hold(store.dir);
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  const std::string stuck = store.publish("stuck", KILN_TEST_PLUGIN_SWAP_SELFTEST_HANGS);
  SwapOptions options = store.swap_options();
  options.watch = true;
  options.watch_interval = std::chrono::milliseconds(5);
  options.deadlines.selftest = std::chrono::milliseconds(300);
  SwapProbe probe(store.runtime, options);
  Loop loop(probe);

  const auto result = run_kiln({"swap", "swap", "probe", "--to", stuck, "--json", "--wait", "20000"},
                               cli_env(store.dir / "cache"));
  CAPTURE(result.out);
  CAPTURE(result.err);
  CHECK(result.exit_code == 8);
  const auto out = nlohmann::json::parse(result.out);
  REQUIRE(out["acknowledged"].size() == 1);
  const auto &ack = out["acknowledged"][0];
  CHECK(ack["outcome"] == "refused");
  CHECK(ack["exit_code"] == 8);
  const std::string note = ack["note"];
  CHECK(note.rfind("selftest: timed out after 300 ms (SwapOptions::deadlines.selftest)", 0) == 0);
  CHECK(loop.wrong.load() == 0);
  CHECK(loop.settled_version() == 1);
  CHECK(probe.resident()[0].serial == 1);
  hold.release();
  CHECK(eventually([&] { return probe.collect() == 0; }));
}

}  // TEST_SUITE
