// Mass properties of the chain's bodies: a URDF <inertial> in its link's frame, and the merge of
// a link hanging off a body by fixed joints into that body (what KDL's chain does implicitly by
// keeping the fixed segments: the same motion, so the same forces).
#pragma once

#include <urdf_model/link.h>

#include "urdf_chain.hpp"

namespace kiln::robotgen {

// The link's <inertial> in the link's frame (the inertia tensor rotated by the inertial
// origin's rpy); zero mass and inertia for a link without one.
Inertial inertial_of(const urdf::Link &link);

// into += part, where part is given in a frame placed at `where` in into's frame.
void merge(Inertial &into, const Inertial &part, const Transform &where);

// About the frame origin: first moment h = m c and the rotational inertia I_o = I_c + m (|c|^2 1 - c c^T)
// (row-major), the form the generated RNEA uses (exact for a zero-mass body with a rotational inertia).
std::array<double, 3> first_moment(const Inertial &body);
std::array<double, 9> inertia_about_origin(const Inertial &body);

// nullopt-style check: "" when the inertial is physical, else why not (for a message).
std::string inertial_problem(const urdf::Inertial &inertial);

}  // namespace kiln::robotgen
