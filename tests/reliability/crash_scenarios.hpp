// The scenarios of the fault-point suite (test_crash_points.cpp runs them): a kiln CLI command on
// a prepared store, the fault points it must reach, and what must hold after a kill at each.
// Builds, publishes, the sweep and gc are listed in test_crash_points.cpp; import in
// crash_import.cpp, verify --repair in crash_repair.cpp, remote fetches and uploads in
// crash_remote.cpp; the checks in crash_scenarios.cpp, the kill loops in crash_runs.cpp.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "reliability/child.hpp"
#include "reliability/store_check.hpp"
#include "reliability/workspace.hpp"

namespace kiln::reliability {

struct Scenario {
  std::string title;
  std::vector<std::string> points;  // the fault points it must reach
  std::function<void(const Workspace &)> setup;
  std::function<Op(const Workspace &)> op;
  std::vector<Named> names;  // checked after every kill: each loads or is cleanly absent
  Backend needs = Backend::fake_nvcc;
  // The default checks (check_store of ws.store() after the kill and after the next run, then
  // every swept leftover gone and the op's name recorded) suit a command that writes the
  // writable cache and leaves it whole. Where those do not fit (an --into directory, a store
  // damaged on purpose) a scenario turns them off and checks in these instead; where set with
  // the defaults on, they run in addition. Each reports through doctest CHECKs.
  bool default_checks = true;
  std::function<void(const Workspace &)> after_kill = {};
  std::function<void(const Workspace &, const Outcome &next)> after_next = {};  // `next`: that run
};

inline const std::vector<std::string> &file_points() {
  static const std::vector<std::string> points = {"file.after_temp_write", "file.after_temp_fsync", "file.after_rename",
                                                  "file.after_dir_fsync"};
  return points;
}

inline std::vector<std::string> with_file_points(std::vector<std::string> points) {
  points.insert(points.end(), file_points().begin(), file_points().end());
  return points;
}

inline void must(const Outcome &outcome, const std::string &what) {
  REQUIRE_MESSAGE(outcome.ok(), what << ": " << outcome.describe());
}

inline void setup_op(const Workspace &ws, const Op &op) { must(run(op.argv, op.env, ws.root()), "setup: " + op.label); }

// One finding of `kiln verify --store <ws.store()> --json` (no repair).
struct Finding {
  std::string kind, severity, path;
  std::string describe() const { return severity + " " + kind + " " + path; }
};
struct Verified {
  Outcome outcome;
  std::vector<Finding> findings;
};
Verified verify_store(const Workspace &ws);

// What must hold after a kill of scenario.op and after the next (uncut) run of it: the default
// checks where on, then the scenario's own. Return the leftovers check_store counted, by kind.
std::map<std::string, int> check_after_kill(const Scenario &scenario, const Workspace &ws);
std::map<std::string, int> check_after_next(const Scenario &scenario, const Workspace &ws, const Op &op,
                                            const Outcome &next);

// Why a scenario cannot run on this machine (its toolchain is missing), or empty.
std::string missing_toolchain(Backend backend);

// Kills each scenario's command at each of its fault points, at every pass (KILN_FAULT=
// <point>:<nth>, nth = 1, 2, ... until it runs through), each on a fresh workspace; after each
// kill, the checks, the next (uncut) run and the checks again. Prints the figures as `what`.
void kill_at_fault_points(const std::vector<Scenario> &all, const char *what);

// How far a killed command got in ws's writable cache, in words: `named` recorded in its
// manifest, an entry of its consumer committed but not named, staging directories only, nothing.
std::string what_landed(const Workspace &ws, const Named &named);

// What a killed run of modes[mode] left in `ws`, in words, for the figures.
using Landed = std::function<std::string(std::size_t mode, const Workspace &ws)>;
// SIGKILLs `target` runs of the modes' commands (picked at random, each on a fresh workspace)
// at random moments of their run; after each kill, the same checks and rerun. The seed is
// printed; KILN_RELIABILITY_SEED replays a run.
void kill_at_random(const std::vector<Scenario> &modes, long target, const Landed &landed, const char *what);

std::vector<Scenario> import_scenarios();  // crash_import.cpp
Scenario import_scenario(bool into);       // ... into the writable cache, or --into a fresh directory
std::vector<std::string> bundle_keys();    // the content keys of the bundle they import
std::vector<Scenario> repair_scenarios();  // crash_repair.cpp
// crash_remote.cpp: a build served by a remote (http or redis) and a build uploading to one.
// Only in a process that found the remote test servers (support/remote_servers.hpp).
Scenario remote_fetch_scenario(const std::string &transport);
Scenario remote_upload_scenario();

}  // namespace kiln::reliability
