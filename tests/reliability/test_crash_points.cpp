// Crash injection at named fault points (src/support/fault_point.hpp), as SQLite tests its
// journal: each scenario (a kiln CLI command on a prepared store) is killed at each fault point
// it must reach, at every pass of that point (KILN_FAULT=<point>:<nth>, nth = 1, 2, ... until
// the command runs through), then the store is checked (store_check.hpp), the command is run
// again and must succeed, and the store is checked again, leftovers included. The scenarios of
// builds, publishes, the sweep and gc are here; import's and verify --repair's in crash_import.cpp
// and crash_repair.cpp (crash_scenarios.hpp).
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <set>

#include <boost/filesystem/operations.hpp>

#include "reliability/child.hpp"
#include "reliability/crash_scenarios.hpp"
#include "reliability/store_check.hpp"
#include "reliability/suite.hpp"
#include "reliability/workspace.hpp"
#include "support/fault_point.hpp"
#include "support/fixtures.hpp"

using namespace kiln::reliability;
using kiln::test::TempDir;

namespace {

std::vector<Scenario> scenarios() {
  const std::vector<std::string> build_points = with_file_points(
      {"file.after_copy_fsync", "staging.after_fsync", "staging.after_rename", "build.after_entry", "build.after_bykey",
       "manifest.locked"});
  const std::vector<std::string> nvrtc_points = with_file_points(
      {"staging.after_fsync", "staging.after_rename", "build.after_entry", "build.after_bykey", "manifest.locked"});
  const std::vector<std::string> publish_points =
      with_file_points({"staging.after_fsync", "staging.after_rename", "publish.after_entry", "manifest.locked"});
  const auto nothing = [](const Workspace &) {};
  std::vector<Scenario> all;
  all.push_back({"publish a new name", publish_points, nothing,
                 [](const Workspace &ws) { return ws.publish("plug"); }, {{"crash", "plug"}}});
  all.push_back({"publish another entry over a named one", publish_points,
                 [](const Workspace &ws) {
                   setup_op(ws, ws.publish("plug", "none"));
                   setup_op(ws, ws.publish("other", "none"));
                 },
                 [](const Workspace &ws) { return ws.publish("plug", "sm_90"); }, {{"crash", "plug"}, {"crash", "other"}}});
  all.push_back({"publish an existing entry under a new name (manifest update only)",
                 with_file_points({"publish.after_entry", "manifest.locked"}),
                 [](const Workspace &ws) { setup_op(ws, ws.publish("plug", "none")); },
                 [](const Workspace &ws) { return ws.publish("alias", "none"); }, {{"crash", "plug"}, {"crash", "alias"}}});
  all.push_back({"build a new recipe (stand-in nvcc)", build_points, nothing,
                 [](const Workspace &ws) { return ws.build(Backend::fake_nvcc, "built", 0); }, {{"crash", "built"}}});
  all.push_back({"rebuild a changed recipe over its named entry (stand-in nvcc)", build_points,
                 [](const Workspace &ws) {
                   setup_op(ws, ws.build(Backend::fake_nvcc, "built", 0));
                   setup_op(ws, ws.publish("plug"));
                 },
                 [](const Workspace &ws) { return ws.build(Backend::fake_nvcc, "built", 3); },
                 {{"crash", "built"}, {"crash", "plug"}}});
  all.push_back({"build device images (NVRTC)", nvrtc_points, nothing,
                 [](const Workspace &ws) { return ws.build(Backend::nvrtc, "kernels", 0); }, {{"crash", "kernels"}},
                 Backend::nvrtc});
  all.push_back({"sweep a killed publish's staging directory", {"sweep.before_remove", "sweep.after_remove"},
                 [](const Workspace &ws) {
                   // A publish killed with its staging directory complete but not yet renamed.
                   Op killed = ws.publish("plug");
                   killed.env["KILN_FAULT"] = "staging.after_fsync";
                   REQUIRE(run(killed.argv, killed.env, ws.root()).killed());
                 },
                 [](const Workspace &ws) { return ws.publish("plug"); }, {{"crash", "plug"}}});
  all.push_back({"gc evicts an orphan entry; the named ones stay", {"gc.after_rename"},
                 [](const Workspace &ws) {
                   setup_op(ws, ws.publish("plug", "sm_80"));
                   setup_op(ws, ws.publish("plug", "none"));  // the first entry is now an orphan
                   setup_op(ws, ws.publish("other", "sm_90"));
                 },
                 [](const Workspace &ws) {
                   Op op;
                   op.label = "gc --max-size 0";
                   op.argv = ws.kiln({"gc", "--max-size", "0", "--json"});
                   op.env = ws.env();
                   op.consumer = "crash";
                   op.name = "plug";  // named: never evicted
                   return op;
                 },
                 {{"crash", "plug"}, {"crash", "other"}}});
  all.push_back({"build with the real nvcc", build_points, nothing,
                 [](const Workspace &ws) { return ws.build(Backend::real_nvcc, "built", 0); }, {{"crash", "built"}},
                 Backend::real_nvcc});
  return all;
}

std::vector<Scenario> import_and_repair() {
  std::vector<Scenario> all = import_scenarios();
  for (auto &scenario : repair_scenarios()) all.push_back(std::move(scenario));
  return all;
}

}  // namespace

TEST_SUITE("crash") {
  // Each listed point is killed in its scenario or that scenario's run fails ("never reached"),
  // so every point listed by a scenario that always runs (stand-in nvcc only) is covered.
  TEST_CASE("crash points: every fault point is listed by a scenario that runs everywhere") {
    std::set<std::string> listed;
    for (const auto &group : {scenarios(), import_and_repair()}) {
      for (const Scenario &scenario : group) {
        if (scenario.needs == Backend::fake_nvcc) listed.insert(scenario.points.begin(), scenario.points.end());
      }
    }
    for (const char *point : kiln::support::kFaultPoints) {
      CHECK_MESSAGE(listed.count(point) == 1, "fault point " << std::string(point) << " is in no scenario");
    }
  }

  TEST_CASE("crash points: builds, publishes, the sweep and gc are killed at each fault point, at every pass; the "
            "store stays whole") {
    kill_at_fault_points(scenarios(), "builds, publishes, sweep, gc");
  }

  TEST_CASE("crash points: import and verify --repair are killed at each fault point, at every pass; the store "
            "stays whole and the next run finishes the job") {
    kill_at_fault_points(import_and_repair(), "import, verify --repair");
  }
}
