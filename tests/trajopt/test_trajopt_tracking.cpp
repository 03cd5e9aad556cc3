// kiln TrajOpt tests of interface revision 1.1 on the host path (activate(-1)) of the iiwa14 N=64
// plugin: what info reports, goals out of reach kept within the limits, tracking a reference, the
// shifted warm start, a revision-1.0 caller's smaller structs, and the refusals of bad tracking
// inputs. The device runs the same cases in test_trajopt_gpu.cpp.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>

#include "trajopt_tracking_cases.hpp"

namespace {

using namespace kiln::test::trajopt;

const std::string kTrackingPlugin = plugin_file("KILN_TRAJOPT_PLUGIN_IIWA14", KILN_TRAJOPT_PLUGIN_IIWA14);

}  // namespace

TEST_CASE("trajopt 1.1: info reports tracking, the shifted warm start and results kept within the limits") {
  Solver s(kTrackingPlugin, -1, std::nullopt);
  kiln_trajopt_info info{};
  info.struct_size = sizeof info;
  REQUIRE(s.api->info(s.handle(), &info) == KILN_OK);
  CHECK(info.features == (KILN_TRAJOPT_FEATURE_TRACKING | KILN_TRAJOPT_FEATURE_WITHIN_LIMITS));
  CHECK(info.solve_flags == (KILN_TRAJOPT_SOLVE_WARM_START | KILN_TRAJOPT_SOLVE_WARM_SHIFT));
  // A revision-1.0 host's info ends before features: nothing is written past it.
  kiln_trajopt_info old{};
  old.struct_size = offsetof(kiln_trajopt_info, features);
  old.features = 0xabcdu;
  REQUIRE(s.api->info(s.handle(), &old) == KILN_OK);
  CHECK(old.features == 0xabcdu);
  CHECK(old.dof == 7);
}

TEST_CASE("trajopt 1.1 host path: goals out of reach come back within every limit, not converged") {
  Solver s(kTrackingPlugin, -1, 4u);
  check_out_of_reach_within_limits(s);
}

TEST_CASE("trajopt 1.1 host path: tracking a reference, positions alone and with orientations") {
  Solver s(kTrackingPlugin, -1, 2u);
  SUBCASE("positions, the default weights") { check_tracks_reference(s, 2, 0.0f); }
  SUBCASE("positions and orientations") { check_tracks_reference(s, 2, 30.0f); }
}

TEST_CASE("trajopt 1.1 host path: the next tick from the last plan advanced by one knot") {
  Solver warm(kTrackingPlugin, -1, 2u), cold(kTrackingPlugin, -1, 2u);
  check_shifted_warm_start(warm, cold, 2);
}

TEST_CASE("trajopt 1.1: a revision-1.0 caller's smaller structs are read with the new fields' defaults") {
  Solver s(kTrackingPlugin, -1, 2u);
  Batch b = random_batch(2, 71, Goals::mixed);
  b.problem.struct_size = offsetof(kiln_trajopt_problem, track_poses);
  b.result.struct_size = offsetof(kiln_trajopt_result, within_limits);
  b.track_poses.assign(size_t{2} * kN * 7, 0.0f);  // past the caller's struct: never read
  b.point();
  std::fill(b.within_limits.begin(), b.within_limits.end(), uint8_t{7});
  std::string message;
  REQUIRE_MESSAGE(s.solve(b, &message) == KILN_OK, message);
  for (uint32_t i = 0; i < b.count; ++i) {
    CAPTURE(i);
    CHECK(b.converged[i] == 1);
    CHECK(judge(b, i).meets());
    CHECK(b.within_limits[i] == 7);  // not written: the caller's struct has no such field
  }
  b.problem.struct_size = offsetof(kiln_trajopt_problem, stream);  // smaller than revision 1.0's
  CHECK(s.solve(b, &message) == KILN_ERR_INVALID_ARGUMENT);
  CHECK(message.find("struct_size") != std::string::npos);
}

TEST_CASE("trajopt 1.1: bad tracking inputs are refused, naming the problem, the knot and the field") {
  Solver s(kTrackingPlugin, -1, 2u);
  Batch b = random_batch(2, 72, Goals::joint, 0.4);
  track_minimum_jerk(b, 100.0f, 0.0f);
  std::string message;
  SUBCASE("no references") {
    b.track_poses.clear();
    b.point();
    CHECK(s.solve(b, &message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("track_poses is NULL") != std::string::npos);
  }
  SUBCASE("a reference that is not finite") {
    b.track_poses[(size_t{1} * kN + 9) * 7 + 2] = std::nanf("");
    CHECK(s.solve(b, &message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("problem 1: its reference pose at knot 10") != std::string::npos);
  }
  SUBCASE("a zero quaternion") {
    for (int a = 3; a < 7; ++a) b.track_poses[(size_t{0} * kN + 4) * 7 + a] = 0.0f;
    CHECK(s.solve(b, &message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("knot 5 has a zero quaternion") != std::string::npos);
  }
  SUBCASE("a negative weight") {
    b.track_weights[(size_t{1} * kN + 0) * 2 + 1] = -1.0f;
    CHECK(s.solve(b, &message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("problem 1: a tracking weight at knot 1") != std::string::npos);
  }
  SUBCASE("a goal kind no revision defines") {
    b.goal_kinds[1] = 3;
    CHECK(s.solve(b, &message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("goal kind 3") != std::string::npos);
  }
  SUBCASE("a flag no revision defines") {
    b.options.flags = 0x4u;
    CHECK(s.solve(b, &message) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(message.find("flags") != std::string::npos);
  }
}
