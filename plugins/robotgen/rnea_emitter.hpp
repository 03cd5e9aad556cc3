// The inverse-dynamics header (kiln_rnea_chain.cuh): the recursive Newton-Euler algorithm of one
// chain (torques from q, qd, qdd and gravity), the gravity torques, the joint-space mass matrix
// and the joint limits, templated on the scalar, host and device, no allocation, straight-line
// code per joint with the chain's constants (axes, origins, masses, first moments, inertias) as
// literals. Keyed like the FK header: its bytes follow from the URDF's bytes and the arguments.
#pragma once

#include <array>
#include <string>

#include "urdf_chain.hpp"

namespace kiln::robotgen {

constexpr const char *kRneaGeneratorVersion = "kiln-urdf-rnea 2";

// gravity: the acceleration of gravity in the base frame (m/s^2), the default of rnea().
std::string emit_rnea_header(const Chain &chain, const std::string &ns, const std::array<double, 3> &gravity);

}  // namespace kiln::robotgen
