#include "rnea_reference.hpp"

#include <stdexcept>

#if KILN_TEST_HAVE_KDL
#include <kdl/chaindynparam.hpp>
#include <kdl/chainidsolver_recursive_newton_euler.hpp>

#include "kiln_kdl_chain.hpp"
#endif

namespace kiln::test::rnea {

#if KILN_TEST_HAVE_KDL

std::optional<std::string> no_kdl() { return std::nullopt; }

struct KdlModel::Impl {
  KDL::Chain chain;
};

KdlModel::KdlModel(const std::string &urdf, const std::string &base, const std::string &tip)
    : impl_(new Impl{kiln_kdl::chain_from_urdf(urdf, base, tip)}) {}

KdlModel::~KdlModel() = default;

std::vector<std::string> KdlModel::joint_names() const {
  std::vector<std::string> names;
  for (const KDL::Segment &segment : impl_->chain.segments) {
    if (segment.getJoint().getType() != KDL::Joint::None) names.push_back(segment.getJoint().getName());
  }
  return names;
}

namespace {
KDL::JntArray array(const std::vector<double> &values) {
  KDL::JntArray out(static_cast<unsigned>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) out(static_cast<unsigned>(i)) = values[i];
  return out;
}
}  // namespace

std::vector<double> KdlModel::torques(const std::vector<double> &q, const std::vector<double> &qd,
                                      const std::vector<double> &qdd, const std::array<double, 3> &g,
                                      const std::array<double, 6> *tip_wrench) const {
  KDL::ChainIdSolver_RNE solver(impl_->chain, KDL::Vector(g[0], g[1], g[2]));
  KDL::Wrenches external(impl_->chain.getNrOfSegments(), KDL::Wrench::Zero());
  if (tip_wrench) {
    const std::array<double, 6> &w = *tip_wrench;
    external.back() = KDL::Wrench(KDL::Vector(w[0], w[1], w[2]), KDL::Vector(w[3], w[4], w[5]));
  }
  KDL::JntArray tau(impl_->chain.getNrOfJoints());
  const int status = solver.CartToJnt(array(q), array(qd), array(qdd), external, tau);
  if (status < 0) throw std::runtime_error("KDL::ChainIdSolver_RNE::CartToJnt failed: " + std::to_string(status));
  std::vector<double> out(tau.rows());
  for (unsigned i = 0; i < tau.rows(); ++i) out[i] = tau(i);
  return out;
}

std::vector<double> KdlModel::mass_matrix(const std::vector<double> &q) const {
  KDL::ChainDynParam dynamics(impl_->chain, KDL::Vector::Zero());
  KDL::JntSpaceInertiaMatrix M(impl_->chain.getNrOfJoints());
  const int status = dynamics.JntToMass(array(q), M);
  if (status < 0) throw std::runtime_error("KDL::ChainDynParam::JntToMass failed: " + std::to_string(status));
  std::vector<double> out;
  for (unsigned i = 0; i < M.rows(); ++i) {
    for (unsigned j = 0; j < M.columns(); ++j) out.push_back(M(i, j));
  }
  return out;
}

#else

std::optional<std::string> no_kdl() {
  return std::string("Orocos KDL was not found when this build was configured (liborocos-kdl-dev, "
                     "libkdl-parser-dev, libtinyxml-dev: scripts/install-deps)");
}

struct KdlModel::Impl {};
KdlModel::KdlModel(const std::string &, const std::string &, const std::string &) {
  throw std::runtime_error(*no_kdl());
}
KdlModel::~KdlModel() = default;
std::vector<std::string> KdlModel::joint_names() const { return {}; }
std::vector<double> KdlModel::torques(const std::vector<double> &, const std::vector<double> &,
                                      const std::vector<double> &, const std::array<double, 3> &,
                                      const std::array<double, 6> *) const {
  return {};
}
std::vector<double> KdlModel::mass_matrix(const std::vector<double> &) const { return {}; }

#endif

}  // namespace kiln::test::rnea
