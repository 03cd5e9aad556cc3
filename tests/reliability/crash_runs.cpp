// The two ways the crash suite kills a scenario's command (crash_scenarios.hpp): at each named
// fault point at every pass, and at random moments. Both check the store after each kill, run
// the command again (it must succeed) and check again.
#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "reliability/crash_scenarios.hpp"
#include "reliability/suite.hpp"
#include "support/fault_point.hpp"
#include "support/fixtures.hpp"

namespace kiln::reliability {

std::string missing_toolchain(Backend backend) {
  if (backend == Backend::nvrtc && !toolchains().nvrtc) return "NVRTC not found: " + toolchains().nvrtc_detail;
  if (backend == Backend::real_nvcc && toolchains().nvcc.empty()) return "no nvcc (CUDA_HOME, /usr/local/cuda)";
  if (backend == Backend::real_nvcc && !long_run()) return "the real-nvcc scenario runs in the long variant (scripts/reliability)";
  return "";
}

// Kills each scenario at each of its points at every pass and checks what is left.
// KILN_RELIABILITY_PASS_STRIDE=s kills at passes 1, 1+s, 1+2s, ... instead: every point is still
// killed at least at its first pass, and the run past its last pass still proves the command
// finishes unharmed. The sanitizer stage uses it, where every process costs several times more.
void kill_at_fault_points(const std::vector<Scenario> &all, const char *what) {
  const int stride = static_cast<int>(std::max(1L, setting("KILN_RELIABILITY_PASS_STRIDE", 1)));
  OrphanReaper reaper;
  const double start = now_seconds();
  std::map<std::string, int> kills_at;
  int kills = 0, reruns = 0;
  std::map<std::string, int> leftovers_after_kill, leftovers_after_next;
  for (const Scenario &scenario : all) {
    if (const std::string why = missing_toolchain(scenario.needs); !why.empty()) {
      say("SKIPPED crash scenario \"%s\": %s", scenario.title.c_str(), why.c_str());
      MESSAGE("SKIPPED crash scenario \"" << scenario.title << "\": " << why);
      continue;
    }
    int scenario_kills = 0;
    for (const std::string &point : scenario.points) {
      REQUIRE_MESSAGE(kiln::support::is_fault_point(point.c_str()), point);
      for (int nth = 1;; nth += stride) {
        INFO("scenario \"" << scenario.title << "\", KILN_FAULT=" << point << ":" << nth);
        REQUIRE(nth <= 32);  // a point passed more often than that is a runaway loop
        test::TempDir dir;
        const Workspace ws(dir.path());
        scenario.setup(ws);
        const Op op = scenario.op(ws);
        Op armed = op;
        armed.env["KILN_FAULT"] = point + ":" + std::to_string(nth);
        const Outcome outcome = run(armed.argv, armed.env, ws.root());
        reaper.end_orphans();
        if (!outcome.killed()) {
          // Passed fewer than nth times: the command ran through, unharmed by the arming.
          CHECK_MESSAGE(nth > 1, "fault point " << point << " is never reached by \"" << scenario.title << "\"");
          CHECK_MESSAGE(outcome.ok(), outcome.describe());
          break;
        }
        ++kills, ++scenario_kills, ++kills_at[point];

        for (const auto &[kind, count] : check_after_kill(scenario, ws)) leftovers_after_kill[kind] += count;
        const Outcome next = run(op.argv, op.env, ws.root());
        ++reruns;
        CHECK_MESSAGE(next.ok(), "the next " << op.label << " after the kill: " << next.describe());
        for (const auto &[kind, count] : check_after_next(scenario, ws, op, next)) leftovers_after_next[kind] += count;
      }
    }
    say("crash scenario \"%s\": %d kills at %zu fault points", scenario.title.c_str(), scenario_kills,
        scenario.points.size());
  }
  const std::string passes = stride == 1 ? "every pass" : "passes 1, " + std::to_string(1 + stride) + ", ...";
  say("crash points (%s): %d kills at %zu fault points, %s (%d reruns all succeeding) in %.1f s", what, kills,
      kills_at.size(), passes.c_str(), reruns, now_seconds() - start);
  for (const auto &[point, count] : kills_at) say("  %-28s %d kills", point.c_str(), count);
  for (const auto &[kind, count] : leftovers_after_kill) {
    say("  leftovers after the kills: %-20s %d (after the next command: %d)", kind.c_str(), count,
        leftovers_after_next[kind]);
  }
}

void kill_at_random(const std::vector<Scenario> &modes, long target, const Landed &landed, const char *what) {
  const unsigned seed = static_cast<unsigned>(setting("KILN_RELIABILITY_SEED", std::random_device{}() % 1000000));
  say("crash random %s: seed %u (KILN_RELIABILITY_SEED=%u replays it), target %ld kills", what, seed, seed, target);
  MESSAGE("seed " << seed);
  std::mt19937 random(seed);
  OrphanReaper reaper;

  // The kill window per mode: the longest of the uncut runs so far (one first, then every
  // eighth). Most of a command's time is the process starting, so a share of the kills land
  // before it writes anything: counted by `landed`, and the rest still cover its write steps.
  std::vector<double> window(modes.size(), -1);
  std::vector<long> kills(modes.size()), finished(modes.size());
  std::map<std::string, int> where;
  long total = 0, runs = 0, uncut = 0;
  const double start = now_seconds();
  while (total < target) {
    const std::size_t mode = random() % modes.size();
    const Scenario &scenario = modes[mode];
    test::TempDir dir;
    const Workspace ws(dir.path());
    scenario.setup(ws);
    const Op op = scenario.op(ws);
    if (window[mode] < 0 || ++runs % 8 == 0) {
      const Outcome outcome = run(op.argv, op.env, ws.root());
      REQUIRE_MESSAGE(outcome.ok(), op.label << ": " << outcome.describe());
      window[mode] = std::max(window[mode], outcome.seconds);
      ++uncut;
      continue;
    }
    INFO("seed " << seed << ", kill " << total + 1 << ": " << op.label);
    const double delay = std::uniform_real_distribution<double>(0.0, window[mode])(random);
    Child child(op.argv, op.env, ws.root());
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    child.kill();
    const Outcome outcome = child.wait();
    reaper.end_orphans();
    if (!outcome.killed()) {
      CHECK_MESSAGE(outcome.ok(), op.label << ": " << outcome.describe());
      ++finished[mode];
      continue;
    }
    ++kills[mode], ++total;
    ++where[landed(mode, ws)];
    check_after_kill(scenario, ws);
    const Outcome next = run(op.argv, op.env, ws.root());
    CHECK_MESSAGE(next.ok(), "the next " << op.label << ": " << next.describe());
    check_after_next(scenario, ws, op, next);
  }
  say("crash random %s: %ld kills in %.1f s (seed %u), each followed by the checks, a successful rerun and the "
      "checks; %ld uncut runs", what, total, now_seconds() - start, seed, uncut);
  for (std::size_t mode = 0; mode < modes.size(); ++mode) {
    say("  %-60s %ld kills, %ld runs finished before their kill, kill window %.3f s", modes[mode].title.c_str(),
        kills[mode], finished[mode], window[mode]);
  }
  for (const auto &[state, count] : where) say("  killed with %-34s %d", state.c_str(), count);
  CHECK(total >= target);
}

}  // namespace kiln::reliability
