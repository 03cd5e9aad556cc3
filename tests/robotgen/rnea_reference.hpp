// The independent reference for the generated dynamics: Orocos KDL on the same URDF
// (kdl_parser::treeFromFile, Tree::getChain(base, tip), ChainIdSolver_RNE, ChainDynParam). KDL's
// types stay in rnea_reference.cpp, so the test files need no KDL headers and still compile (and
// skip visibly) where KDL is missing.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::test::rnea {

// A precondition (support/preconditions.hpp): nullopt when this build has KDL, else why not.
std::optional<std::string> no_kdl();

class KdlModel {
 public:
  // The chain base -> tip of the URDF file; throws std::runtime_error naming what failed.
  KdlModel(const std::string &urdf, const std::string &base, const std::string &tip);
  ~KdlModel();
  KdlModel(const KdlModel &) = delete;
  KdlModel &operator=(const KdlModel &) = delete;

  std::vector<std::string> joint_names() const;  // the movable joints, chain order
  // ChainIdSolver_RNE::CartToJnt under gravity g (base frame), with no external wrench or with
  // tip_wrench (force, moment; KDL's f_ext of the last segment: the tip link's frame and origin).
  std::vector<double> torques(const std::vector<double> &q, const std::vector<double> &qd,
                              const std::vector<double> &qdd, const std::array<double, 3> &g,
                              const std::array<double, 6> *tip_wrench = nullptr) const;
  // ChainDynParam::JntToMass, row-major.
  std::vector<double> mass_matrix(const std::vector<double> &q) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::test::rnea
