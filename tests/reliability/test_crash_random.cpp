// SIGKILL at random moments of real publishes and builds (stand-in nvcc, NVRTC and the real
// nvcc, mixed), all on one store. After each kill the store is checked, the killed command
// runs again and must succeed, and the store is checked again, leftovers included. The seed is
// printed (KILN_RELIABILITY_SEED replays a run); KILN_RELIABILITY_KILLS scales it.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include "reliability/child.hpp"
#include "reliability/store_check.hpp"
#include "reliability/suite.hpp"
#include "reliability/workspace.hpp"
#include "store/manifest.hpp"
#include "support/fixtures.hpp"

using namespace kiln::reliability;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

enum class Kind { publish, fake_build, nvrtc_build, nvcc_build };
const char *kind_name(Kind kind) {
  switch (kind) {
    case Kind::publish: return "publish";
    case Kind::fake_build: return "build (stand-in nvcc)";
    case Kind::nvrtc_build: return "build (NVRTC)";
    case Kind::nvcc_build: return "build (real nvcc)";
  }
  return "?";
}

// What a kill may change, counted cheaply (the full checks run after the kill).
struct Snapshot {
  int entries = 0, leftovers = 0;
};
Snapshot snapshot(const Workspace &ws) {
  Snapshot shot;
  boost::system::error_code error;
  for (fs::recursive_directory_iterator it(ws.store(), error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name[0] == '.') {
      ++shot.leftovers;
      it.disable_recursion_pending();
    } else if (it->path().parent_path().filename() == "store" && it.depth() == 3) {
      ++shot.entries;  // <store>/consumers/<consumer>/store/<key>
      it.disable_recursion_pending();
    }
  }
  return shot;
}

// What the store shows of a killed command: how far it got.
std::string landed(const Snapshot &before, const Snapshot &after, const std::string &record_before,
                   const std::string &record_after) {
  if (record_before != record_after) return "named (manifest updated)";
  if (after.entries > before.entries) return "entry committed, not yet named";
  if (after.leftovers > before.leftovers) return "leftovers only";
  return "nothing visible";
}

std::string manifest_record(const Workspace &ws, const Op &op) {
  try {
    const auto manifest =
        kiln::store::read_manifest(ws.store() / "consumers" / op.consumer / "manifest.json", op.consumer);
    if (!manifest) return "";
    const auto found = manifest->artifacts.find(op.name);
    return found == manifest->artifacts.end() ? "" : found->second.content_key + "@" + found->second.updated + "/" +
                                                         found->second.input_key;
  } catch (const std::exception &error) {
    return std::string("unreadable: ") + error.what();
  }
}

}  // namespace

TEST_SUITE("crash") {
  TEST_CASE("crash random: SIGKILLs at random moments of publishes and builds; the store stays whole") {
    const long target = setting("KILN_RELIABILITY_KILLS", long_run() ? 1000 : 200);
    const unsigned seed = static_cast<unsigned>(setting("KILN_RELIABILITY_SEED", std::random_device{}() % 1000000));
    say("crash random: seed %u (KILN_RELIABILITY_SEED=%u replays it), target %ld kills", seed, seed, target);
    MESSAGE("seed " << seed);
    std::mt19937 random(seed);

    // The mix: publishes are fast, builds take longer; the real nvcc (seconds a build) is kept to
    // a few percent in CI. What is missing here is skipped visibly and replaced by the stand-in.
    std::map<Kind, long> wanted = {{Kind::publish, target * 50 / 100}, {Kind::fake_build, target * 25 / 100},
                                   {Kind::nvrtc_build, target * 20 / 100}};
    wanted[Kind::nvcc_build] = target - wanted[Kind::publish] - wanted[Kind::fake_build] - wanted[Kind::nvrtc_build];
    if (!toolchains().nvrtc) {
      say("SKIPPED NVRTC builds in the random kills: %s", toolchains().nvrtc_detail.c_str());
      MESSAGE("SKIPPED NVRTC builds: " << toolchains().nvrtc_detail);
      wanted[Kind::fake_build] += wanted[Kind::nvrtc_build];
      wanted[Kind::nvrtc_build] = 0;
    }
    if (toolchains().nvcc.empty()) {
      say("SKIPPED real-nvcc builds in the random kills: no nvcc");
      MESSAGE("SKIPPED real-nvcc builds: no nvcc");
      wanted[Kind::fake_build] += wanted[Kind::nvcc_build];
      wanted[Kind::nvcc_build] = 0;
    }

    OrphanReaper reaper;
    TempDir dir;
    const Workspace ws(dir.path());
    std::map<Kind, int> variant;      // the next build variant per kind: every build is a miss
    // The kill window of each kind: the longest of its last few calibration runs, fresh
    // commands run uncut every eighth time (the machine's load changes; reruns after a kill and
    // runs that beat their kill are shorter than a whole command and would shrink the window).
    std::map<Kind, std::deque<double>> uncut;
    std::map<Kind, double> duration;
    const auto ran_uncut = [&](Kind kind, double seconds) {
      auto &recent = uncut[kind];
      recent.push_back(seconds);
      if (recent.size() > 8) recent.pop_front();
      duration[kind] = *std::max_element(recent.begin(), recent.end());
    };
    std::map<Kind, long> kills, completed, started;
    long calibrations = 0;
    std::map<std::string, int> where;
    std::map<std::string, std::set<std::string>> leftovers_seen;  // kind -> distinct paths
    std::map<std::string, std::size_t> leftovers_at_end;
    std::set<std::string> names_seen;
    int orphans = 0;
    const auto next_op = [&](Kind kind) {
      switch (kind) {
        case Kind::publish: {
          const std::string name = "p" + std::to_string(random() % 3);
          return ws.publish(name, random() % 2 == 0 ? "none" : "sm_90");
        }
        case Kind::fake_build: return ws.build(Backend::fake_nvcc, "fake", variant[kind]++);
        case Kind::nvrtc_build: return ws.build(Backend::nvrtc, "kernels", variant[kind]++);
        case Kind::nvcc_build: return ws.build(Backend::real_nvcc, "nvcc", variant[kind]++);
      }
      return Op{};
    };
    const auto names = [&] {
      std::vector<Named> list;
      for (const auto &name : names_seen) list.push_back({"crash", name});
      return list;
    };

    // Calibration: one uncut run of each kind gives the window the kills are spread over.
    for (const auto &[kind, count] : wanted) {
      if (count == 0) continue;
      const Op op = next_op(kind);
      const Outcome outcome = run(op.argv, op.env, ws.root());
      REQUIRE_MESSAGE(outcome.ok(), op.label << ": " << outcome.describe());
      ran_uncut(kind, outcome.seconds);
      ++calibrations;
      names_seen.insert(op.name);
    }

    const double start = now_seconds();
    long total = 0;
    for (;;) {
      std::vector<Kind> open;
      for (const auto &[kind, count] : wanted) {
        for (long i = kills[kind]; i < count; ++i) open.push_back(kind);
      }
      if (open.empty()) break;
      const Kind kind = open[random() % open.size()];
      const Op op = next_op(kind);
      names_seen.insert(op.name);
      if (++started[kind] % 8 == 0) {
        const Outcome outcome = run(op.argv, op.env, ws.root());
        CHECK_MESSAGE(outcome.ok(), op.label << ": " << outcome.describe());
        ran_uncut(kind, outcome.seconds);
        ++calibrations;
        continue;
      }
      INFO("seed " << seed << ", kill " << total + 1 << ": " << op.label);
      const Snapshot before = snapshot(ws);
      const std::string record_before = manifest_record(ws, op);

      const double delay = std::uniform_real_distribution<double>(0.0, duration[kind])(random);
      Child child(op.argv, op.env, ws.root());
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      child.kill();
      const Outcome outcome = child.wait();
      orphans += reaper.end_orphans();
      if (!outcome.killed()) {
        // It finished first: it must have succeeded, and it tells how long an uncut run takes.
        CHECK_MESSAGE(outcome.ok(), op.label << ": " << outcome.describe());
        ++completed[kind];
        continue;
      }
      ++kills[kind], ++total;
      const StoreCheck after_kill = check_store(ws, names());
      CHECK_MESSAGE(after_kill.ok(), "after the kill (" << delay << " s in):\n" << after_kill.report());
      ++where[landed(before, snapshot(ws), record_before, manifest_record(ws, op))];
      for (const auto &[kind_name, paths] : after_kill.leftovers) leftovers_seen[kind_name].insert(paths.begin(), paths.end());

      const Outcome next = run(op.argv, op.env, ws.root());
      CHECK_MESSAGE(next.ok(), "the next " << op.label << ": " << next.describe());
      const StoreCheck after_next = check_store(ws, names());
      CHECK_MESSAGE(after_next.ok(), "after the next " << op.label << ":\n" << after_next.report());
      for (const auto &problem : unswept(after_next)) CHECK_MESSAGE(false, problem);
      leftovers_at_end.clear();
      for (const auto &[kind_name, paths] : after_next.leftovers) leftovers_at_end[kind_name] = paths.size();
      if (total % 50 == 0) say("  %ld kills so far (%.0f s)", total, now_seconds() - start);
    }

    say("crash random: %ld kills in %.1f s (seed %u), each followed by the checks, a successful rerun and the checks; "
        "%ld calibration runs uncut", total, now_seconds() - start, seed, calibrations);
    for (const auto &[kind, count] : kills) {
      say("  %-24s %ld kills, %ld runs finished before their kill, last kill window %.3f s", kind_name(kind), count,
          completed[kind], duration[kind]);
    }
    for (const auto &[state, count] : where) say("  killed with %-32s %d", state.c_str(), count);
    say("  compiler processes left running by killed builds, ended by the suite: %d", orphans);
    for (const auto &[kind, paths] : leftovers_seen) {
      say("  leftovers left by the kills: %-20s %zu (in the store at the end: %zu)", kind.c_str(), paths.size(),
          leftovers_at_end[kind]);
    }
    CHECK(total >= target);
  }
}
