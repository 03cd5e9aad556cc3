// kiln IK tests: the generated header of data/mixed_chain.urdf (world -> tool_tip) against an
// independent composition of the URDF's transforms with Eigen: every joint type, off-axis and
// negative axes, an unnormalised axis, fixed joints before, between and after movable ones.
#include <doctest/doctest.h>

#include <Eigen/Geometry>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kiln_fk_chain.cuh"  // <build>/tests/ik/mixed/

namespace {

using Chain = kiln_fk::Chain;
constexpr double kPi = 3.14159265358979323846;

enum Type { fixed, revolute, continuous, prismatic };

// The joints of mixed_chain.urdf from world to tool_tip, as written there.
struct UrdfJoint {
  Type type;
  double xyz[3];
  double rpy[3];
  double axis[3];
};
const std::vector<UrdfJoint> kJoints = {
    {fixed, {0.1, -0.2, 0.3}, {0.1, 0.2, 0.3}, {0, 0, 0}},                    // mount
    {revolute, {0, 0, 0.2}, {0, 0, 0}, {1, 0, 0}},                            // j1
    {continuous, {0.05, 0, 0.1}, {0.3, -0.4, 0.5}, {0, -1, 0}},               // j2
    {prismatic, {0, 0.1, 0}, {0, 0, 1.5707963267948966}, {0, 0.6, 0.8}},      // j3
    {fixed, {0.02, 0.03, 0.04}, {-0.2, 0.1, 0.7}, {0, 0, 0}},                 // bend
    {revolute, {0.1, 0, 0}, {0, 0.5, 0}, {0.3, 0.4, -0.5}},                   // j4
    {revolute, {0, 0.07, 0.12}, {1.5707963267948966, 0, 0}, {0, 0, -1}},      // j5
    {prismatic, {0, 0, 0.05}, {0, 0, 0}, {1, 0, 0}},                          // j6
    {fixed, {0, 0, 0.15}, {0.1, 0.2, 0.3}, {0, 0, 0}},                        // tool_joint
    {fixed, {0.01, 0.02, 0.03}, {0, 0, 0}, {0, 0, 0}},                        // tool_tip_joint
};

Eigen::Isometry3d urdf_fk(const double *q) {
  Eigen::Isometry3d T = Eigen::Isometry3d::Identity();
  int movable = 0;
  for (const UrdfJoint &joint : kJoints) {
    Eigen::Isometry3d origin = Eigen::Isometry3d::Identity();
    origin.translation() = Eigen::Vector3d(joint.xyz[0], joint.xyz[1], joint.xyz[2]);
    // URDF rpy: fixed-axis roll about x, then pitch about y, then yaw about z.
    origin.linear() = (Eigen::AngleAxisd(joint.rpy[2], Eigen::Vector3d::UnitZ()) *
                       Eigen::AngleAxisd(joint.rpy[1], Eigen::Vector3d::UnitY()) *
                       Eigen::AngleAxisd(joint.rpy[0], Eigen::Vector3d::UnitX()))
                          .toRotationMatrix();
    T = T * origin;
    if (joint.type == fixed) continue;
    const Eigen::Vector3d axis = Eigen::Vector3d(joint.axis[0], joint.axis[1], joint.axis[2]).normalized();
    Eigen::Isometry3d motion = Eigen::Isometry3d::Identity();
    if (joint.type == prismatic) {
      motion.translation() = axis * q[movable];
    } else {
      motion.linear() = Eigen::AngleAxisd(q[movable], axis).toRotationMatrix();
    }
    T = T * motion;
    ++movable;
  }
  return T;
}

}  // namespace

TEST_CASE("kiln-urdf-fk: a chain with every joint type matches the URDF composed by hand") {
  REQUIRE(Chain::kDof == 6);
  CHECK(std::string(Chain::kBaseLink) == "world");
  CHECK(std::string(Chain::kTipLink) == "tool_tip");
  const char *names[] = {"j1", "j2", "j3", "j4", "j5", "j6"};
  const int types[] = {Chain::kRevolute, Chain::kContinuous, Chain::kPrismatic,
                       Chain::kRevolute, Chain::kRevolute,   Chain::kPrismatic};
  for (int j = 0; j < Chain::kDof; ++j) {
    CHECK(std::string(Chain::kJointNames[j]) == names[j]);
    CHECK(Chain::kJointTypes[j] == types[j]);
    const double norm = std::sqrt(Chain::kAxes[j][0] * Chain::kAxes[j][0] + Chain::kAxes[j][1] * Chain::kAxes[j][1] +
                                  Chain::kAxes[j][2] * Chain::kAxes[j][2]);
    CHECK(std::fabs(norm - 1.0) < 1e-12);
  }
  CHECK(Chain::kLower[1] == doctest::Approx(-kPi));  // continuous
  CHECK(Chain::kUpper[1] == doctest::Approx(kPi));
  CHECK(Chain::kLower[2] == -0.1);
  CHECK(Chain::kUpper[5] == 0.3);

  {  // the pose at q = 0 the generator composed itself (a self-test's known value) is the URDF's
    const double zero[Chain::kDof] = {};
    const Eigen::Isometry3d expected = urdf_fk(zero);
    for (int i = 0; i < 3; ++i) {
      CHECK(std::fabs(Chain::kTipAtZeroPosition[i] - expected.translation()[i]) < 1e-9);
      for (int k = 0; k < 3; ++k) CHECK(std::fabs(Chain::kTipAtZeroRotation[3 * i + k] - expected.linear()(i, k)) < 1e-9);
    }
  }

  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> wide(-3.0, 3.0), short_range(-0.1, 0.3);
  for (int trial = 0; trial < 50; ++trial) {
    double q[Chain::kDof];
    for (int j = 0; j < Chain::kDof; ++j) q[j] = Chain::kJointTypes[j] == Chain::kPrismatic ? short_range(rng) : wide(rng);
    if (trial == 0) {
      for (double &v : q) v = 0;
    }
    const Eigen::Isometry3d expected = urdf_fk(q);
    double p[3], R[9];
    Chain::fk<double>(q, p, R);
    for (int i = 0; i < 3; ++i) {
      CHECK(std::fabs(p[i] - expected.translation()[i]) < 1e-9);
      for (int k = 0; k < 3; ++k) CHECK(std::fabs(R[3 * i + k] - expected.linear()(i, k)) < 1e-9);
    }
    // Jacobian against central differences (prismatic columns: the axis, no rotation).
    double J[6 * Chain::kDof], p2[3], R2[9];
    Chain::fk_jacobian<double>(q, p2, R2, J);
    const double h = 1e-6;
    for (int j = 0; j < Chain::kDof; ++j) {
      double plus[Chain::kDof], minus[Chain::kDof];
      for (int k = 0; k < Chain::kDof; ++k) plus[k] = minus[k] = q[k];
      plus[j] += h;
      minus[j] -= h;
      const Eigen::Isometry3d a = urdf_fk(plus), b = urdf_fk(minus);
      const Eigen::Vector3d linear = (a.translation() - b.translation()) / (2 * h);
      const Eigen::AngleAxisd turn(Eigen::Matrix3d(a.linear() * b.linear().transpose()));
      const Eigen::Vector3d angular = turn.axis() * turn.angle() / (2 * h);
      for (int i = 0; i < 3; ++i) {
        CHECK(std::fabs(J[6 * j + i] - linear[i]) < 1e-6);
        CHECK(std::fabs(J[6 * j + 3 + i] - angular[i]) < 1e-6);
      }
    }
  }
}
