// The generated dynamics of iiwa14.urdf (lbr_iiwa_link_0 -> lbr_iiwa_link_7) against KDL.
#include <doctest/doctest.h>

#include "kiln_rnea_chain.cuh"  // <build>/tests/robotgen/iiwa14/
#include "rnea_checks.hpp"
#include "support/preconditions.hpp"

namespace {
using Chain = kiln_rnea::Chain;
const std::string kUrdf = std::string(KILN_ROBOTGEN_ROBOTS_DIR) + "/iiwa14.urdf";
}  // namespace

TEST_CASE("robotgen iiwa14: rnea, gravity torques and mass matrix agree with KDL to 1e-9" *
          kiln::test::skip_if(kiln::test::rnea::no_kdl)) {
  kiln::test::rnea::check_against_kdl<Chain>(kUrdf);
}

TEST_CASE("robotgen iiwa14: the limits and joint types are the URDF's") {
  static_assert(Chain::kDof == 7, "iiwa14 has 7 joints");
  kiln::test::rnea::check_limits_against_urdf<Chain>(kUrdf);
  CHECK(Chain::kEffortLimit[0] == 300.0);
  CHECK(Chain::kVelocityLimit[6] == 10.0);
  // lbr_iiwa_link_1's inertial as written (no fixed links in this chain).
  CHECK(Chain::kMass[0] == 4.0);
  CHECK(Chain::kCom[0][1] == -0.03);
}

TEST_CASE("robotgen iiwa14: the float instantiation agrees with double") {
  kiln::test::rnea::check_float_instantiation<Chain>();
}
