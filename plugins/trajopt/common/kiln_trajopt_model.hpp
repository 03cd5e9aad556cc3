// kiln TrajOpt: the robot model a trajectory is judged with (and random problems are drawn from), in
// double: the joint limits, forward kinematics and inverse dynamics of one chain. Two sources:
//   generated_model<Fk, Dyn>()        the generated headers a host was compiled with;
//   plugin_model(table, instance)     a loaded plugin's own model, through kiln.robotmodel/1
//                                     (abi/kiln/ext/robotmodel.h): the chain the plugin solved for,
//                                     whatever robot that is.
#pragma once

#include <Eigen/Geometry>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <kiln/ext/robotmodel.h>

namespace kiln_trajopt_common {

struct Model {
  uint32_t dof = 0;
  std::vector<double> lower, upper, velocity_limit, effort_limit;  // velocity, effort: 0 = none
  std::vector<char> position_limited;
  std::string robot;        // the URDF's robot name
  std::string description;  // which model this is, for a report
  // count joint vectors -> count poses (x y z qw qx qy qz); count states -> count torque vectors.
  std::function<void(const double *q, uint32_t count, double *poses)> fk;
  std::function<void(const double *q, const double *qd, const double *qdd, uint32_t count, double *tau)> rnea;
};

// The forward kinematics of the generated header Fk (kiln_fk::Chain), as Model::fk.
template <class Fk>
std::function<void(const double *, uint32_t, double *)> generated_fk() {
  return [](const double *q, uint32_t count, double *poses) {
    for (uint32_t i = 0; i < count; ++i) {
      double p[3], R[9];
      Fk::fk(q + size_t{i} * Fk::kDof, p, R);
      const Eigen::Matrix3d rotation = Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(R);
      const Eigen::Quaterniond quat(rotation);
      const double pose[7] = {p[0], p[1], p[2], quat.w(), quat.x(), quat.y(), quat.z()};
      for (int k = 0; k < 7; ++k) poses[size_t{i} * 7 + k] = pose[k];
    }
  };
}

// The model of the generated headers Fk (kiln_fk::Chain) and Dyn (kiln_rnea::Chain).
template <class Fk, class Dyn>
Model generated_model(const std::string &description) {
  Model m;
  m.dof = Dyn::kDof;
  for (int j = 0; j < Dyn::kDof; ++j) {
    m.lower.push_back(Dyn::kLower[j]);
    m.upper.push_back(Dyn::kUpper[j]);
    m.velocity_limit.push_back(Dyn::kVelocityLimit[j]);
    m.effort_limit.push_back(Dyn::kEffortLimit[j]);
    m.position_limited.push_back(Dyn::kPositionLimited[j] ? 1 : 0);
  }
  m.robot = Dyn::kRobot;
  m.description = description;
  m.fk = generated_fk<Fk>();
  m.rnea = [](const double *q, const double *qd, const double *qdd, uint32_t count, double *tau) {
    for (uint32_t i = 0; i < count; ++i) {
      const size_t at = size_t{i} * Dyn::kDof;
      Dyn::rnea(q + at, qd + at, qdd + at, tau + at);
    }
  };
  return m;
}

// The same, built once per pair of headers and kept (judging many trajectories builds no model each).
template <class Fk, class Dyn>
const Model &shared_generated_model() {
  static const Model model = generated_model<Fk, Dyn>("the generated headers");
  return model;
}

// A plugin's own model through its kiln.robotmodel/1 table. The table and the instance must outlive
// the model. Throws std::runtime_error (with the plugin's message) when the plugin refuses a call or,
// unless `dynamics` is false (kinematics only: Model::rnea left empty), has no dynamics: a
// trajectory's torques cannot be judged without them.
inline Model plugin_model(const kiln_robotmodel_v1 *api, const kiln_instance *instance, bool dynamics = true) {
  char message[256] = "";
  const auto check = [&](kiln_status status, const char *what) {
    if (status != KILN_OK) throw std::runtime_error(std::string("kiln.robotmodel/1 ") + what + ": " + message);
  };
  kiln_robotmodel_chain_info chain{};
  chain.struct_size = sizeof chain;
  check(api->chain(instance, &chain, message, sizeof message), "chain");
  if (dynamics && chain.has_rnea == 0) {
    throw std::runtime_error("kiln.robotmodel/1: the plugin's model has no dynamics (has_rnea 0): torques cannot be judged");
  }
  Model m;
  m.dof = chain.dof;
  for (uint32_t j = 0; j < chain.dof; ++j) {
    kiln_robotmodel_joint joint{};
    joint.struct_size = sizeof joint;
    check(api->joint(instance, j, &joint, message, sizeof message), "joint");
    m.lower.push_back(joint.lower);
    m.upper.push_back(joint.upper);
    m.velocity_limit.push_back(joint.velocity_limit);
    m.effort_limit.push_back(joint.effort_limit);
    m.position_limited.push_back(joint.position_limited != 0 ? 1 : 0);
  }
  m.robot = chain.robot;
  m.description = std::string("the plugin's own model (kiln.robotmodel/1: ") + chain.robot + ", " + chain.source + ", " +
                  chain.base_link + " -> " + chain.tip_link + ")";
  m.fk = [api, instance](const double *q, uint32_t count, double *poses) {
    char text[256] = "";
    if (api->fk(instance, q, count, poses, text, sizeof text) != KILN_OK)
      throw std::runtime_error(std::string("kiln.robotmodel/1 fk: ") + text);
  };
  if (chain.has_rnea == 0) return m;
  m.rnea = [api, instance](const double *q, const double *qd, const double *qdd, uint32_t count, double *tau) {
    char text[256] = "";
    if (api->rnea(instance, q, qd, qdd, count, tau, text, sizeof text) != KILN_OK)
      throw std::runtime_error(std::string("kiln.robotmodel/1 rnea: ") + text);
  };
  return m;
}

}  // namespace kiln_trajopt_common
