// The robot model's fingerprint: what a plugin generated from a URDF was generated from, so that a
// host can tell whether a plugin fits its robot. A digest of the model as the URDF parser reads it
// (every link's inertial, every joint's type, frames, axis, limits, dynamics, mimic; not visuals,
// collisions or materials, nor comments, whitespace or the order of elements), the chain (base,
// tip) and the generators' versions: "xxh128:<32 hex digits>". Not the gravity: the forward
// kinematics header carries the fingerprint too and must not depend on it (its bytes key the IK
// plugins); a plugin with dynamics reports its gravity beside it (kiln_robotmodel_chain_info).
#pragma once

#include <urdf_model/model.h>

#include <string>

namespace kiln::robotgen {

// The canonical text the fingerprint digests, a line per fact (for tests and for a person
// comparing two models: the first differing line names the link or joint).
std::string canonical_model_text(const urdf::ModelInterface &model, const std::string &base, const std::string &tip);

// "xxh128:<32 hex digits>" of that text.
std::string model_fingerprint(const std::string &canonical_text);

}  // namespace kiln::robotgen
