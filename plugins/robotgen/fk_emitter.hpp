// The forward-kinematics header (kiln_fk_chain.cuh): straight-line fk and fk_jacobian of one
// chain, templated on the scalar, host and device. Its bytes key the IK plugins: any change to
// what this writes changes every IK artifact, so bump kFkGeneratorVersion with it.
#pragma once

#include <string>

#include "urdf_chain.hpp"

namespace kiln::robotgen {

constexpr const char *kFkGeneratorVersion = "kiln-urdf-fk 4";

std::string emit_fk_header(const Chain &chain, const std::string &ns);

}  // namespace kiln::robotgen
