// The checks every generated dynamics header goes through, templated on its kiln_rnea::Chain (each
// test_rnea_<robot>.cpp includes one header and instantiates these):
//   - against KDL on the same URDF: >= 1000 random (q, qd, qdd), gravity only, another gravity,
//     a wrench at the tip, the mass matrix (KDL's ChainDynParam, a composite-inertia algorithm, not an RNEA);
//   - the limits and joint types are the URDF's (urdfdom);
//   - the float instantiation agrees with the double one.
#pragma once

#include <doctest/doctest.h>

#include <urdf_model/model.h>
#include <urdf_parser/urdf_parser.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "rnea_reference.hpp"

namespace kiln::test::rnea {

// Agreement with KDL in double (N m or N).
constexpr double kTolerance = 1e-9;
constexpr int kSamples = 2000;

template <class Chain>
struct State {
  std::vector<double> q = std::vector<double>(Chain::kDof), qd = q, qdd = q;
};

// q uniform within the URDF's position limits, qd within its velocity limits (+-2 where it gives
// none), qdd within +-10 rad/s^2 or +-2 m/s^2 (URDFs give no acceleration limits).
template <class Chain>
State<Chain> random_state(std::mt19937_64 &rng, bool moving) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  State<Chain> s;
  for (int j = 0; j < Chain::kDof; ++j) {
    const double mid = 0.5 * (Chain::kLower[j] + Chain::kUpper[j]), half = 0.5 * (Chain::kUpper[j] - Chain::kLower[j]);
    s.q[j] = mid + half * unit(rng);
    if (!moving) continue;
    const double velocity = Chain::kVelocityLimit[j] > 0 ? Chain::kVelocityLimit[j] : 2.0;
    s.qd[j] = velocity * unit(rng);
    s.qdd[j] = (Chain::kJointTypes[j] == Chain::kPrismatic ? 2.0 : 10.0) * unit(rng);
  }
  return s;
}

inline double max_abs_difference(const std::vector<double> &a, const std::vector<double> &b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

template <class Chain>
std::vector<double> generated(const State<Chain> &s, const std::array<double, 3> *g = nullptr) {
  std::vector<double> tau(Chain::kDof);
  if (g) {
    Chain::rnea(s.q.data(), s.qd.data(), s.qdd.data(), g->data(), tau.data());
  } else {
    Chain::rnea(s.q.data(), s.qd.data(), s.qdd.data(), tau.data());
  }
  return tau;
}

template <class Chain>
void check_against_kdl(const std::string &urdf) {
  const KdlModel kdl(urdf, Chain::kBaseLink, Chain::kTipLink);
  const std::vector<std::string> names = kdl.joint_names();
  REQUIRE(names.size() == static_cast<std::size_t>(Chain::kDof));
  for (int j = 0; j < Chain::kDof; ++j) CHECK(names[static_cast<std::size_t>(j)] == Chain::kJointNames[j]);
  const std::array<double, 3> gravity = {Chain::kGravity[0], Chain::kGravity[1], Chain::kGravity[2]};
  std::mt19937_64 rng(20261202);
  double worst = 0, largest = 0;
  for (int n = 0; n < kSamples; ++n) {
    const State<Chain> s = random_state<Chain>(rng, true);
    const std::vector<double> reference = kdl.torques(s.q, s.qd, s.qdd, gravity);
    worst = std::max(worst, max_abs_difference(generated<Chain>(s), reference));
    for (const double t : reference) largest = std::max(largest, std::fabs(t));
  }
  MESSAGE(std::string(Chain::kRobot) << " rnea vs KDL ChainIdSolver_RNE, " << kSamples << " random states: max |diff| " << worst
                        << " (largest |tau| " << largest << ")");
  CHECK(worst <= kTolerance);
  CHECK(largest > 1.0);  // the states did exercise the dynamics

  double worst_gravity = 0, worst_holding = 0;
  for (int n = 0; n < 500; ++n) {
    const State<Chain> s = random_state<Chain>(rng, false);
    const std::vector<double> reference = kdl.torques(s.q, s.qd, s.qdd, gravity);
    worst_gravity = std::max(worst_gravity, max_abs_difference(generated<Chain>(s), reference));
    std::vector<double> holding(Chain::kDof);
    Chain::gravity_torques(s.q.data(), holding.data());
    worst_holding = std::max(worst_holding, max_abs_difference(holding, reference));
  }
  MESSAGE(std::string(Chain::kRobot) << " gravity only (qd = qdd = 0): rnea max |diff| " << worst_gravity
                        << ", gravity_torques max |diff| " << worst_holding);
  CHECK(worst_gravity <= kTolerance);
  CHECK(worst_holding <= kTolerance);

  // Gravity passed at run time (a tilted base), against KDL under the same vector.
  const std::array<double, 3> tilted = {1.7, -2.3, -9.4};
  double worst_tilted = 0;
  for (int n = 0; n < 500; ++n) {
    const State<Chain> s = random_state<Chain>(rng, true);
    worst_tilted = std::max(worst_tilted, max_abs_difference(generated<Chain>(s, &tilted),
                                                             kdl.torques(s.q, s.qd, s.qdd, tilted)));
  }
  MESSAGE(std::string(Chain::kRobot) << " gravity (1.7, -2.3, -9.4): max |diff| " << worst_tilted);
  CHECK(worst_tilted <= kTolerance);

  // A wrench at the tip (payload, contact), against KDL's f_ext on the tip segment.
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  double worst_wrench = 0;
  for (int n = 0; n < 500; ++n) {
    const State<Chain> s = random_state<Chain>(rng, true);
    const std::array<double, 6> w = {30 * unit(rng), 30 * unit(rng), 30 * unit(rng),
                                     5 * unit(rng),  5 * unit(rng),  5 * unit(rng)};
    std::vector<double> tau(Chain::kDof);
    Chain::rnea_tip_wrench(s.q.data(), s.qd.data(), s.qdd.data(), tilted.data(), w.data(), tau.data());
    worst_wrench = std::max(worst_wrench, max_abs_difference(tau, kdl.torques(s.q, s.qd, s.qdd, tilted, &w)));
  }
  MESSAGE(std::string(Chain::kRobot) << " rnea_tip_wrench vs KDL f_ext at the tip segment: max |diff| " << worst_wrench);
  CHECK(worst_wrench <= kTolerance);

  double worst_mass = 0, asymmetry = 0;
  for (int n = 0; n < 500; ++n) {
    const State<Chain> s = random_state<Chain>(rng, false);
    std::vector<double> M(static_cast<std::size_t>(Chain::kDof * Chain::kDof));
    Chain::mass_matrix(s.q.data(), M.data());
    worst_mass = std::max(worst_mass, max_abs_difference(M, kdl.mass_matrix(s.q)));
    for (int i = 0; i < Chain::kDof; ++i) {
      for (int j = 0; j < Chain::kDof; ++j) {
        asymmetry = std::max(asymmetry, std::fabs(M[static_cast<std::size_t>(i * Chain::kDof + j)] -
                                                  M[static_cast<std::size_t>(j * Chain::kDof + i)]));
      }
    }
  }
  MESSAGE(std::string(Chain::kRobot) << " mass_matrix vs KDL ChainDynParam::JntToMass: max |diff| " << worst_mass
                        << ", asymmetry " << asymmetry);
  CHECK(worst_mass <= kTolerance);
  CHECK(asymmetry <= kTolerance);
}

template <class Chain>
void check_limits_against_urdf(const std::string &urdf) {
  const urdf::ModelInterfaceSharedPtr model = urdf::parseURDFFile(urdf);
  REQUIRE(model);
  for (int j = 0; j < Chain::kDof; ++j) {
    CAPTURE(Chain::kJointNames[j]);
    const urdf::JointConstSharedPtr joint = model->getJoint(Chain::kJointNames[j]);
    REQUIRE(joint);
    switch (joint->type) {
      case urdf::Joint::REVOLUTE: CHECK(Chain::kJointTypes[j] == Chain::kRevolute); break;
      case urdf::Joint::CONTINUOUS: CHECK(Chain::kJointTypes[j] == Chain::kContinuous); break;
      case urdf::Joint::PRISMATIC: CHECK(Chain::kJointTypes[j] == Chain::kPrismatic); break;
      default: FAIL("joint type " << joint->type << " in the chain");
    }
    if (joint->type == urdf::Joint::CONTINUOUS) {
      CHECK_FALSE(Chain::kPositionLimited[j]);
    } else {
      REQUIRE(joint->limits);
      CHECK(Chain::kPositionLimited[j]);
      CHECK(Chain::kLower[j] == joint->limits->lower);
      CHECK(Chain::kUpper[j] == joint->limits->upper);
    }
    CHECK(Chain::kVelocityLimit[j] == (joint->limits ? joint->limits->velocity : 0.0));
    CHECK(Chain::kEffortLimit[j] == (joint->limits ? joint->limits->effort : 0.0));
  }
}

// The same states in float: within float rounding of the double result (relative to the largest torque).
template <class Chain>
void check_float_instantiation() {
  std::mt19937_64 rng(7);
  double worst = 0;
  for (int n = 0; n < 200; ++n) {
    const State<Chain> s = random_state<Chain>(rng, true);
    const std::vector<double> reference = generated<Chain>(s);
    float q[Chain::kDof], qd[Chain::kDof], qdd[Chain::kDof], tau[Chain::kDof];
    for (int j = 0; j < Chain::kDof; ++j) {
      q[j] = static_cast<float>(s.q[static_cast<std::size_t>(j)]);
      qd[j] = static_cast<float>(s.qd[static_cast<std::size_t>(j)]);
      qdd[j] = static_cast<float>(s.qdd[static_cast<std::size_t>(j)]);
    }
    Chain::rnea(q, qd, qdd, tau);
    double largest = 1.0;
    for (const double t : reference) largest = std::max(largest, std::fabs(t));
    for (int j = 0; j < Chain::kDof; ++j) {
      worst = std::max(worst, std::fabs(static_cast<double>(tau[j]) - reference[static_cast<std::size_t>(j)]) / largest);
    }
  }
  MESSAGE(std::string(Chain::kRobot) << " float vs double rnea: max relative difference " << worst);
  CHECK(worst < 1e-4);
}

}  // namespace kiln::test::rnea
