// kiln IK tests: the plugin's self-test ("kiln.selftest/1", abi/kiln/ext/selftest.h) on the host
// path (activate(-1)) for both robots and the build variants (plugins/ik/README.md, "Variants"):
// iiwa14-b (other defaults) passes, iiwa14-broken (KILN_IK_FAULT_WRONG_ANSWERS) is caught.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/ext/selftest.h>

#include "ik_test_support.hpp"

namespace {

using kiln::test::ik::Batch;
using kiln::test::ik::Solver;
using kiln::test::ik::Trajectories;

struct Outcome {
  kiln_status status;
  std::string message;
  double ms;
};

Outcome run_selftest(const Solver &solver) {
  const auto *selftest = solver.instance.interface<kiln_selftest_v1>(KILN_SELFTEST_INTERFACE_ID);
  REQUIRE(selftest != nullptr);
  char message[512] = "";
  const auto start = std::chrono::steady_clock::now();
  const kiln_status status = selftest->run(solver.instance.handle(), message, sizeof message);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return {status, message, ms};
}

}  // namespace

TEST_CASE("ik selftest: both robots' plugins offer kiln.selftest/1 and pass it on the host") {
  for (const std::string &file : std::vector<std::string>{KILN_IK_PLUGIN_IIWA14, KILN_IK_PLUGIN_PANDA, KILN_IK_PLUGIN_IIWA14_B}) {
    CAPTURE(file);
    Solver solver(file, -1, 16);
    const auto &interfaces = solver.plugin.module->report().interfaces;
    CHECK(std::find(interfaces.begin(), interfaces.end(), KILN_SELFTEST_INTERFACE_ID) != interfaces.end());
    const auto *table = solver.instance.interface<kiln_selftest_v1>(KILN_SELFTEST_INTERFACE_ID);
    REQUIRE(table != nullptr);
    CHECK(table->struct_size == sizeof(kiln_selftest_v1));
    const Outcome outcome = run_selftest(solver);
    MESSAGE(file << ": " << outcome.message << " (" << outcome.ms << " ms on the host)");
    CHECK(outcome.status == KILN_OK);
    CHECK(outcome.message.find("passed") != std::string::npos);
    CHECK(outcome.message.find("8 targets") != std::string::npos);
  }
}

TEST_CASE("ik selftest: the broken variant fails, naming the target and the error seen against the one allowed") {
  Solver broken(KILN_IK_PLUGIN_IIWA14_BROKEN, -1, 16);
  CHECK(broken.plugin.module->report().plugin_version.find("+broken") != std::string::npos);
  const Outcome outcome = run_selftest(broken);
  MESSAGE("broken variant: " << outcome.message);
  CHECK(outcome.status != KILN_OK);
  CHECK(outcome.message.find("target 0") != std::string::npos);
  CHECK(outcome.message.find("allowed") != std::string::npos);

  // What it catches: the broken build still claims its answers converged.
  const Trajectories paths(broken);
  Batch batch(4, broken.dof);
  paths.targets(broken, 4, 0, batch.targets.data());
  char message[256] = "";
  REQUIRE(broken.ik->solve(broken.instance.handle(), &batch.problem, &batch.result, message, sizeof message) == KILN_OK);
  for (uint32_t i = 0; i < 4; ++i) CHECK(batch.converged[i] == 1);
  std::vector<float> poses(4 * KILN_IK_POSE_SIZE);
  REQUIRE(broken.ik->fk(broken.instance.handle(), batch.q.data(), 4, poses.data()) == KILN_OK);
  bool any_off = false;  // yet the tip of its answer is not at the target
  for (uint32_t i = 0; i < 4; ++i) {
    double dot = 0;
    for (int k = 3; k < 7; ++k) dot += double{poses[i * 7 + k]} * batch.targets[i * 7 + k];
    any_off = any_off || 2 * std::acos(std::min(1.0, std::fabs(dot))) > 0.01;  // rad
  }
  CHECK(any_off);
}

TEST_CASE("ik selftest: needs activate, refuses a solve in flight, fits a small max_batch, leaves the warm-start state alone") {
  SUBCASE("not active") {
    Solver idle(KILN_IK_PLUGIN_IIWA14, -1, std::nullopt);
    const Outcome outcome = run_selftest(idle);
    CHECK(outcome.status == KILN_ERR_STATE);
    CHECK(outcome.message.find("activate") != std::string::npos);
  }
  SUBCASE("max_batch 3 solves 3 targets; max_batch 0 checks the FK only") {
    Solver three(KILN_IK_PLUGIN_PANDA, -1, 3);
    Outcome outcome = run_selftest(three);
    CHECK(outcome.status == KILN_OK);
    CHECK(outcome.message.find("3 targets") != std::string::npos);
    Solver none(KILN_IK_PLUGIN_PANDA, -1, 0);
    outcome = run_selftest(none);
    CHECK(outcome.status == KILN_OK);
    CHECK(outcome.message.find("no target solved") != std::string::npos);
  }
  SUBCASE("a solve in flight; the state before and after") {
    Solver solver(KILN_IK_PLUGIN_IIWA14, -1, 4);
    const Trajectories paths(solver);
    Batch batch(4, solver.dof);
    paths.targets(solver, 4, 0, batch.targets.data());
    char message[256] = "";
    REQUIRE(solver.ik->solve_async(solver.instance.handle(), &batch.problem, &batch.result, message, sizeof message) ==
            KILN_OK);
    Outcome outcome = run_selftest(solver);
    CHECK(outcome.status == KILN_ERR_STATE);
    CHECK(outcome.message.find("wait") != std::string::npos);
    REQUIRE(solver.ik->wait(solver.instance.handle(), message, sizeof message) == KILN_OK);
    std::vector<unsigned char> before, after;
    REQUIRE(solver.export_state(before) == KILN_OK);
    outcome = run_selftest(solver);
    CHECK(outcome.status == KILN_OK);
    REQUIRE(solver.export_state(after) == KILN_OK);
    CHECK(after == before);
  }
}
