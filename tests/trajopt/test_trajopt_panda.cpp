// kiln TrajOpt tests, Panda N=64 host path: the Panda's tight limits (2.175 rad/s, 12 N m at the
// wrist) bind, and the solver keeps every trajectory inside them where the plain minimum-jerk start
// would break them.
#include <doctest/doctest.h>

#include <cmath>

#include "trajopt_test_support.hpp"

namespace {
using namespace kiln::test::trajopt;
const std::string kPlugin = plugin_file("KILN_TRAJOPT_PLUGIN_PANDA", KILN_TRAJOPT_PLUGIN_PANDA);

// The peak joint speed of the minimum-jerk start from q0 to the joint goal (1.875 * distance / T).
double start_peak_speed(const Batch &b, uint32_t i) {
  double worst = 0;
  for (int a = 0; a < 7; ++a)
    worst = std::fmax(worst, 1.875 * std::fabs(b.joint_goals[i * 7 + a] - b.q0[i * 7 + a]) / (kN * b.dt[i]) /
                                 Dyn::kVelocityLimit[a]);
  return worst;  // as a fraction of the limit
}
}  // namespace

TEST_CASE("trajopt panda host path: velocity limits that bind are respected") {
  Solver s(kPlugin, -1, 4u);
  Batch b = random_batch(4, 61, Goals::joint, 1.2, 0.012f);  // up to 1.2 rad in 0.768 s
  uint32_t binding = 0;
  for (uint32_t i = 0; i < b.count; ++i) binding += start_peak_speed(b, i) > 1.0 ? 1 : 0;
  REQUIRE(binding >= 1);  // the test means something: some start breaks the limit
  REQUIRE(s.solve(b) == KILN_OK);
  for (uint32_t i = 0; i < b.count; ++i) {
    CAPTURE(i);
    CAPTURE(start_peak_speed(b, i));
    const auto j = judge(b, i);
    CHECK(b.converged[i] == 1);
    CHECK(j.meets());
    CHECK(j.velocity_violation <= 0);
    CHECK(j.torque_violation <= 0);
  }
}

TEST_CASE("trajopt panda host path: pose goals meet the tolerances and every limit") {
  Solver s(kPlugin, -1, 4u);
  Batch b = random_batch(4, 62, Goals::pose);
  REQUIRE(s.solve(b) == KILN_OK);
  for (uint32_t i = 0; i < b.count; ++i) {
    CAPTURE(i);
    CHECK(b.converged[i] == 1);
    CHECK(judge(b, i).meets());
  }
}
