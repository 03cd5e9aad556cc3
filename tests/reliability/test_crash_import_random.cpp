// SIGKILL at random moments of kiln import (the signed bundle of crash_import.cpp), into the
// writable cache or --into a fresh directory, each on a fresh store so that every kill lands in a
// first import, where the writes are. After each kill and after the next import, the checks of
// the import scenarios of the fault-point suite (crash_scenarios.hpp). The seed is printed
// (KILN_RELIABILITY_SEED replays a run); KILN_RELIABILITY_IMPORT_KILLS scales it.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <random>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include "reliability/child.hpp"
#include "reliability/crash_scenarios.hpp"
#include "reliability/suite.hpp"
#include "reliability/workspace.hpp"
#include "store/manifest.hpp"
#include "support/fixtures.hpp"

using namespace kiln::reliability;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

// How far a killed import got, by what the target shows of the bundle's entries.
std::string landed(const fs::path &store) {
  const fs::path consumer = store / "consumers" / "crash";
  const auto manifest = kiln::store::read_manifest(consumer / "manifest.json", "crash");
  int named = 0, committed = 0;
  for (const auto &key : bundle_keys()) {
    if (fs::exists(consumer / "store" / key)) ++committed;
    for (const auto &item : manifest ? manifest->artifacts : std::map<std::string, kiln::store::ManifestRecord>{}) {
      if (item.second.content_key == key) ++named;
    }
  }
  if (named > 0) return "bundle's names recorded";
  if (committed > 0) return "entries committed, not yet named";
  boost::system::error_code error;
  for (fs::directory_iterator it(consumer / "store", error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().rfind(".staging-", 0) == 0) return "staging directories only";
  }
  return "nothing of the bundle written";
}

}  // namespace

TEST_SUITE("crash") {
  TEST_CASE("crash random: SIGKILLs at random moments of imports; the target stays whole and the next import finishes") {
    const long target = setting("KILN_RELIABILITY_IMPORT_KILLS", long_run() ? 500 : 50);
    const unsigned seed = static_cast<unsigned>(setting("KILN_RELIABILITY_SEED", std::random_device{}() % 1000000));
    say("crash random imports: seed %u (KILN_RELIABILITY_SEED=%u replays it), target %ld kills", seed, seed, target);
    MESSAGE("seed " << seed);
    std::mt19937 random(seed);
    OrphanReaper reaper;
    const Scenario modes[2] = {import_scenario(false), import_scenario(true)};

    // The kill window per mode: the longest of the uncut runs so far (one first, then every
    // eighth). Most of an import's time is the process starting, so a share of the kills land
    // before it writes anything: counted, and the rest still cover its write steps.
    std::map<bool, double> window;
    std::map<bool, long> kills, finished;
    std::map<std::string, int> where;
    long total = 0, runs = 0, uncut = 0;
    const double start = now_seconds();
    while (total < target) {
      const bool into = random() % 2 == 1;
      const Scenario &scenario = modes[into];
      TempDir dir;
      const Workspace ws(dir.path());
      scenario.setup(ws);
      const Op op = scenario.op(ws);
      if (window.count(into) == 0 || ++runs % 8 == 0) {
        const Outcome outcome = run(op.argv, op.env, ws.root());
        REQUIRE_MESSAGE(outcome.ok(), op.label << ": " << outcome.describe());
        window[into] = std::max(window[into], outcome.seconds);
        ++uncut;
        continue;
      }
      INFO("seed " << seed << ", kill " << total + 1 << ": " << op.label);
      const double delay = std::uniform_real_distribution<double>(0.0, window[into])(random);
      Child child(op.argv, op.env, ws.root());
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      child.kill();
      const Outcome outcome = child.wait();
      reaper.end_orphans();
      if (!outcome.killed()) {
        CHECK_MESSAGE(outcome.ok(), op.label << ": " << outcome.describe());
        ++finished[into];
        continue;
      }
      ++kills[into], ++total;
      const fs::path written = into ? ws.root() / "image" / "store" : ws.store();
      ++where[landed(written)];
      check_after_kill(scenario, ws);
      const Outcome next = run(op.argv, op.env, ws.root());
      CHECK_MESSAGE(next.ok(), "the next " << op.label << ": " << next.describe());
      check_after_next(scenario, ws, op);
    }
    say("crash random imports: %ld kills in %.1f s (seed %u), each followed by the checks, a successful rerun, the "
        "checks and one more import finding everything present; %ld uncut runs", total, now_seconds() - start, seed,
        uncut);
    for (const bool into : {false, true}) {
      say("  %-28s %ld kills, %ld runs finished before their kill, kill window %.3f s",
          into ? "import --into a fresh dir" : "import into the cache", kills[into], finished[into], window[into]);
    }
    for (const auto &[state, count] : where) say("  killed with %-34s %d", state.c_str(), count);
    CHECK(total >= target);
  }
}
