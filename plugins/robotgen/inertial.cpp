#include "inertial.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>

#include <cmath>
#include <sstream>

namespace kiln::robotgen {
namespace {

Eigen::Matrix3d matrix(const std::array<double, 9> &m) {
  Eigen::Matrix3d out;
  out << m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8];
  return out;
}

std::array<double, 9> array(const Eigen::Matrix3d &m) {
  return {m(0, 0), m(0, 1), m(0, 2), m(1, 0), m(1, 1), m(1, 2), m(2, 0), m(2, 1), m(2, 2)};
}

Eigen::Vector3d vector(const std::array<double, 3> &v) { return {v[0], v[1], v[2]}; }

Eigen::Matrix3d urdf_tensor(const urdf::Inertial &inertial) {
  Eigen::Matrix3d I;
  I << inertial.ixx, inertial.ixy, inertial.ixz, inertial.ixy, inertial.iyy, inertial.iyz, inertial.ixz,
      inertial.iyz, inertial.izz;
  return I;
}

// m (|c|^2 1 - c c^T): the parallel-axis term moving a rotational inertia from the COM to the origin.
Eigen::Matrix3d parallel_axis(double mass, const Eigen::Vector3d &c) {
  return mass * (c.squaredNorm() * Eigen::Matrix3d::Identity() - c * c.transpose());
}

}  // namespace

Inertial inertial_of(const urdf::Link &link) {
  Inertial out;
  if (!link.inertial) return out;
  const urdf::Inertial &in = *link.inertial;
  const Transform pose = from_pose(in.origin);
  const Eigen::Matrix3d R = matrix(pose.R);
  out.mass = in.mass;
  out.com = pose.t;
  out.inertia = array(R * urdf_tensor(in) * R.transpose());
  return out;
}

std::array<double, 3> first_moment(const Inertial &body) {
  return {body.mass * body.com[0], body.mass * body.com[1], body.mass * body.com[2]};
}

std::array<double, 9> inertia_about_origin(const Inertial &body) {
  return array(matrix(body.inertia) + parallel_axis(body.mass, vector(body.com)));
}

void merge(Inertial &into, const Inertial &part, const Transform &where) {
  // Both about into's origin, in into's frame; add; back to the combined COM.
  const Eigen::Matrix3d R = matrix(where.R);
  const Eigen::Vector3d c_part = R * vector(part.com) + vector(where.t);
  const Eigen::Matrix3d I_part = R * matrix(part.inertia) * R.transpose() + parallel_axis(part.mass, c_part);
  const Eigen::Matrix3d I_into = matrix(inertia_about_origin(into));
  const double mass = into.mass + part.mass;
  const Eigen::Vector3d h = into.mass * vector(into.com) + part.mass * c_part;
  const Eigen::Vector3d com = mass > 0 ? Eigen::Vector3d(h / mass) : Eigen::Vector3d::Zero();
  into.mass = mass;
  into.com = {com.x(), com.y(), com.z()};
  into.inertia = array(I_into + I_part - parallel_axis(mass, com));
}

std::string inertial_problem(const urdf::Inertial &inertial) {
  std::ostringstream why;
  if (!std::isfinite(inertial.mass) || inertial.mass < 0) {
    why << "mass " << inertial.mass << " (must be finite and >= 0)";
    return why.str();
  }
  const Eigen::Matrix3d I = urdf_tensor(inertial);
  if (!I.allFinite()) return "an inertia entry that is not finite";
  // Principal moments must be >= 0 (a small negative one, rounding in the URDF, is tolerated).
  const Eigen::Vector3d moments = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(I).eigenvalues();
  const double scale = std::max(1.0, I.cwiseAbs().maxCoeff());
  if (moments.minCoeff() < -1e-12 * scale) {
    why << "an inertia tensor with a negative principal moment (" << moments.minCoeff()
        << "): not a physical body";
    return why.str();
  }
  return "";
}

}  // namespace kiln::robotgen
