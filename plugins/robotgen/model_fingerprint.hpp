// The robot model's fingerprint: what a plugin generated from a URDF was generated from, so that a
// host can tell whether a plugin fits its robot. A digest of the model as the URDF parser reads it
// (every link's inertial, every joint's type, frames, axis, limits, dynamics, mimic; not visuals,
// collisions or materials, nor comments, whitespace or the order of elements), the chain (base,
// tip), the generators' versions and, for a model with dynamics, the gravity they apply:
// "xxh128:<32 hex digits>". A kinematic model (forward kinematics alone, as the IK plugins are
// generated) has no gravity line, so its fingerprint and the FK header's bytes do not depend on
// a gravity it never uses.
#pragma once

#include <urdf_model/model.h>

#include <array>
#include <optional>
#include <string>

namespace kiln::robotgen {

// The canonical text the fingerprint digests, a line per fact (for tests and for a person
// comparing two models: the first differing line names the link or joint).
// `gravity`: the base-frame gravity of the dynamics generated with the model (a "gravity" line
// after the chain's); nullopt for a kinematic model.
std::string canonical_model_text(const urdf::ModelInterface &model, const std::string &base, const std::string &tip,
                                 const std::optional<std::array<double, 3>> &gravity);

// "xxh128:<32 hex digits>" of that text.
std::string model_fingerprint(const std::string &canonical_text);

}  // namespace kiln::robotgen
