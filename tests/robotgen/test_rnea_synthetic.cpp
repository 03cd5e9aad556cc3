// The generated dynamics of data/dynamics_chain.urdf (world -> tool_tip) against KDL: every joint
// type, off-axis axes, joint and inertial origins with rpy, full inertia tensors, a link without
// an <inertial>, massive links fixed before, between and after the movable joints, a branch.
// Its FK header shares the translation unit: the two generated headers coexist.
#include <doctest/doctest.h>

#include "kiln_fk_chain.cuh"    // <build>/tests/robotgen/synthetic/
#include "kiln_rnea_chain.cuh"  // <build>/tests/robotgen/synthetic/
#include "rnea_checks.hpp"
#include "support/preconditions.hpp"

namespace {
using Chain = kiln_rnea::Chain;
const std::string kUrdf = std::string(KILN_ROBOTGEN_TEST_DATA_DIR) + "/dynamics_chain.urdf";
}  // namespace

TEST_CASE("robotgen synthetic chain: rnea, gravity torques and mass matrix agree with KDL to 1e-9" *
          kiln::test::skip_if(kiln::test::rnea::no_kdl)) {
  kiln::test::rnea::check_against_kdl<Chain>(kUrdf);
}

TEST_CASE("robotgen synthetic chain: joints, limits and bodies as the URDF has them") {
  static_assert(Chain::kDof == 6, "j1 .. j6");
  static_assert(Chain::kDof == kiln_fk::Chain::kDof, "the FK and dynamics headers describe one chain");
  kiln::test::rnea::check_limits_against_urdf<Chain>(kUrdf);
  CHECK(Chain::kJointTypes[1] == Chain::kContinuous);
  CHECK(Chain::kEffortLimit[1] == 40.0);  // a continuous joint's <limit effort velocity>
  // l3 (1.8 kg) + l3b (0.9 kg, fixed by "bend"); l4 has no <inertial>; l6 + tool + tool_tip.
  CHECK(Chain::kMass[2] == doctest::Approx(2.7).epsilon(1e-15));
  CHECK(Chain::kMass[3] == 0.0);
  CHECK(Chain::kMass[5] == doctest::Approx(1.0).epsilon(1e-15));
  // "base" (5 kg, fixed before j1) belongs to the base, "side" (2 kg) to a branch: in no body.
  double total = 0;
  for (int j = 0; j < Chain::kDof; ++j) total += Chain::kMass[j];
  CHECK(total == doctest::Approx(3.2 + 2.5 + 2.7 + 0.0 + 1.1 + 1.0).epsilon(1e-14));
}

TEST_CASE("robotgen synthetic chain: the float instantiation agrees with double") {
  kiln::test::rnea::check_float_instantiation<Chain>();
}
