// kiln TrajOpt tests: bad input returns a status and a message, never a crash, and changes nothing:
// NULL pointers, a batch over max_batch, non-finite starts and goals, bad options and kinds, device
// memory on a host-only instance, calls out of order, state blobs of another kind.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "trajopt_test_support.hpp"

namespace {
using namespace kiln::test::trajopt;
const std::string kPlugin = plugin_file("KILN_TRAJOPT_PLUGIN_IIWA14", KILN_TRAJOPT_PLUGIN_IIWA14);

kiln_status solve_with(const Solver &s, const kiln_trajopt_problem *problem, const kiln_trajopt_result *result,
                       std::string &message) {
  char text[512] = "";
  const kiln_status status = s.api->solve(s.handle(), problem, result, text, sizeof text);
  message = text;
  return status;
}
}  // namespace

TEST_CASE("trajopt inputs: refusals name what is wrong") {
  Solver s(kPlugin, -1, 2u);
  Batch b = random_batch(2, 71, Goals::mixed);
  std::string message;
  b.options.max_iterations = 3;

  CHECK(solve_with(s, nullptr, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
  CHECK(message.find("problem is NULL") != std::string::npos);
  CHECK(solve_with(s, &b.problem, nullptr, message) == KILN_ERR_INVALID_ARGUMENT);
  CHECK(message.find("result is NULL") != std::string::npos);
  CHECK(s.api->solve(nullptr, &b.problem, &b.result, nullptr, 0) == KILN_ERR_INVALID_ARGUMENT);

  SUBCASE("NULL buffers") {
    b.problem.q0 = nullptr;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("q0") != std::string::npos);
    b.point();
    b.result.q = nullptr;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    b.point();
    b.problem.joint_goals = nullptr;  // problem 1 has a joint goal
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("joint_goals") != std::string::npos);
  }
  SUBCASE("a batch over max_batch") {
    Batch big = random_batch(3, 72, Goals::pose);
    CHECK(solve_with(s, &big.problem, &big.result, message) == KILN_ERR_CAPACITY);
    CHECK(message.find("max_batch = 2") != std::string::npos);
  }
  SUBCASE("non-finite starts, goals and time steps") {
    b.q0[3] = std::numeric_limits<float>::quiet_NaN();
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("problem 0: the start state") != std::string::npos);
    b.q0[3] = 0.1f;
    b.qd0[9] = std::numeric_limits<float>::infinity();
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("problem 1") != std::string::npos);
    b.qd0[9] = 0;
    b.pose_goals[1] = std::numeric_limits<float>::quiet_NaN();
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    b.pose_goals[1] = 0.2f;
    for (int k = 3; k < 7; ++k) b.pose_goals[k] = 0;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("quaternion is zero") != std::string::npos);
    b.pose_goals[3] = 1;
    b.dt[1] = 0;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("dt") != std::string::npos);
  }
  SUBCASE("bad options and goal kinds") {
    b.options.seeds_per_target = KILN_TRAJOPT_MAX_SEEDS + 1;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    b.options.seeds_per_target = 0;
    b.options.flags = 0x80;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    b.options.flags = 0;
    b.options.position_tolerance = -1;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    b.options.position_tolerance = 0;
    b.options.goal_weight = std::numeric_limits<float>::quiet_NaN();
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    b.options.goal_weight = 0;
    b.goal_kinds[0] = 7;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("goal kind 7") != std::string::npos);
  }
  SUBCASE("device memory on a host-only instance") {
    b.problem.memory = KILN_TRAJOPT_MEMORY_DEVICE;
    CHECK(solve_with(s, &b.problem, &b.result, message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("host only") != std::string::npos);
  }
  // After every refusal the instance still solves.
  Batch fresh = random_batch(2, 71, Goals::mixed);
  CHECK(s.solve(fresh) == KILN_OK);
  CHECK(fresh.converged_count() == 2);
}

TEST_CASE("trajopt inputs: calls out of order and an empty batch") {
  Solver inactive(kPlugin, -1, std::nullopt);
  Batch b = random_batch(1, 73, Goals::pose);
  std::string message;
  CHECK(solve_with(inactive, &b.problem, &b.result, message) == KILN_ERR_STATE);
  CHECK(inactive.api->poll(inactive.handle()) == KILN_TRAJOPT_IDLE);
  Solver s(kPlugin, -1, 1u);
  b.problem.count = 0;
  CHECK(s.solve(b) == KILN_OK);
  char text[256] = "";
  CHECK(s.api->wait(s.handle(), text, sizeof text) == KILN_OK);  // nothing in flight
}

TEST_CASE("trajopt inputs: state blobs of another plugin, version or shape are refused and change nothing") {
  Solver s(kPlugin, -1, 2u);
  Batch b = random_batch(2, 74, Goals::pose);
  REQUIRE(s.solve(b) == KILN_OK);
  const std::vector<unsigned char> good = s.export_state();
  REQUIRE(good.size() == 128 + 2 * (1 + kN * 7) * 4);
  std::string message;
  std::vector<unsigned char> bad = good;
  std::memcpy(bad.data(), "kiln.ik.state\0\0", 16);
  CHECK(s.import_state(bad, &message) == KILN_ERR_UNSUPPORTED);
  bad = good;
  bad[28] = 32;  // horizon N = 32: another module's trajectories
  CHECK(s.import_state(bad, &message) == KILN_ERR_UNSUPPORTED);
  CHECK(message.find("N = 32") != std::string::npos);
  bad = good;
  bad.resize(good.size() - 4);
  CHECK(s.import_state(bad, &message) == KILN_ERR_INVALID_ARGUMENT);
  CHECK(s.import_state({}, &message) == KILN_ERR_INVALID_ARGUMENT);
  bad = good;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bad.data() + 128 + 4 * 5, &nan, 4);
  CHECK(s.import_state(bad, &message) == KILN_ERR_INVALID_ARGUMENT);
  CHECK(s.export_state() == good);  // nothing changed
  Solver small(kPlugin, -1, 1u);
  CHECK(small.import_state(good, &message) == KILN_ERR_CAPACITY);  // slot 1 holds a trajectory
}
