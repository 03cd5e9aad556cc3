// kiln IK tests: the Panda's flange panda_link8 (a chain the tests generate: panda_link0 -> panda_link8).
#include <doctest/doctest.h>

#include <cmath>

#include "kiln_fk_chain.cuh"  // <build>/tests/ik/panda_flange/

TEST_CASE("panda: generated FK at q = 0 puts the flange panda_link8 at (0.088, 0, 0.926), pointing down") {
  using Chain = kiln_fk::Chain;
  CHECK(Chain::kDof == 7);
  const double q[Chain::kDof] = {};
  double p[3], R[9];
  Chain::fk<double>(q, p, R);
  CHECK(std::fabs(p[0] - 0.088) < 1e-6);
  CHECK(std::fabs(p[1]) < 1e-6);
  CHECK(std::fabs(p[2] - 0.926) < 1e-6);
  // The flange's z axis (third column) points down, x stays along the base's x.
  CHECK(std::fabs(R[2]) < 1e-9);
  CHECK(std::fabs(R[5]) < 1e-9);
  CHECK(std::fabs(R[8] + 1.0) < 1e-9);
  CHECK(std::fabs(R[0] - 1.0) < 1e-9);
}
