// The generated dynamics of panda.urdf (panda_link0 -> panda_grasptarget) against KDL: the fixed
// flange, hand and grasp frame after panda_joint7 are merged into its body (KDL keeps them as
// fixed segments of the chain: the same forces); the fingers hang off the chain and are in neither.
#include <doctest/doctest.h>

#include "kiln_rnea_chain.cuh"  // <build>/tests/robotgen/panda/
#include "rnea_checks.hpp"
#include "support/preconditions.hpp"

namespace {
using Chain = kiln_rnea::Chain;
const std::string kUrdf = std::string(KILN_ROBOTGEN_ROBOTS_DIR) + "/panda.urdf";
}  // namespace

TEST_CASE("robotgen panda: rnea, gravity torques and mass matrix agree with KDL to 1e-9" *
          kiln::test::skip_if(kiln::test::rnea::no_kdl)) {
  kiln::test::rnea::check_against_kdl<Chain>(kUrdf);
}

TEST_CASE("robotgen panda: the limits and joint types are the URDF's; the hand is merged into link 7") {
  static_assert(Chain::kDof == 7, "the Panda arm has 7 joints");
  kiln::test::rnea::check_limits_against_urdf<Chain>(kUrdf);
  CHECK(Chain::kEffortLimit[4] == 12.0);
  CHECK(Chain::kVelocityLimit[0] == 2.175);
  // panda_link7 (0.2 kg) + panda_link8 (0) + panda_hand (0.81 kg) + panda_grasptarget (0).
  CHECK(Chain::kMass[6] == doctest::Approx(1.01).epsilon(1e-15));
  // The merged COM: link7's at z 0.08, the hand's at 0.107 + 0.04 along link7's z.
  CHECK(Chain::kCom[6][2] == doctest::Approx((0.2 * 0.08 + 0.81 * 0.147) / 1.01).epsilon(1e-14));
}

TEST_CASE("robotgen panda: the float instantiation agrees with double") {
  kiln::test::rnea::check_float_instantiation<Chain>();
}
