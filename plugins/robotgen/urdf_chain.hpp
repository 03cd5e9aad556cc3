// The serial chain kiln-urdf-fk writes headers for, extracted from a urdfdom model: each
// movable joint with its fixed transform from the previous movable joint (fixed joints folded
// in), its axis, type and limits, and the rigid body it moves (its child link's inertial plus
// those of the links hanging off it by fixed joints along the chain, merged).
#pragma once

#include <urdf_model/model.h>

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::robotgen {

// Every refusal: the message names the URDF, the link or joint, and what to do instead.
class GeneratorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Transform {
  std::array<double, 9> R{1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major
  std::array<double, 3> t{0, 0, 0};
};

Transform compose(const Transform &a, const Transform &b);
Transform from_pose(const urdf::Pose &pose);
bool is_identity(const Transform &transform);

// Rotation entries within this of 0 or +-1 are written as exactly 0 or +-1 (URDFs write pi/2
// as 1.57079632679, whose cosine is 4.9e-12): an error far below float resolution, and the
// generated code drops the zero terms. Translations within 1e-12 m of 0 are written as 0.
constexpr double kRotationSnap = 1e-9;
constexpr double kTranslationSnap = 1e-12;
// The dynamics keep the URDF's numbers as written (its check is KDL on the same URDF, to 1e-9 N m in
// double, and 4.9e-12 in a rotation moves a torque of 500 N m by 2.5e-9): only rounding residue
// of the quaternion -> matrix conversion and of composing fixed joints is snapped.
constexpr double kDynamicsSnap = 1e-14;
double snap(double value, double tolerance, bool unit);
void snap(Transform &transform);

enum class JointKind { revolute = 0, continuous = 1, prismatic = 2 };
const char *kind_name(JointKind kind);
// The URDF's name of a urdf::Joint type ("fixed", "floating", ...; "unknown" for another value).
const char *urdf_type_name(int type);

// A rigid body's mass properties in its own (joint) frame: mass, centre of mass, and the
// rotational inertia about the centre of mass (row-major, symmetric).
struct Inertial {
  double mass = 0;
  std::array<double, 3> com{0, 0, 0};
  std::array<double, 9> inertia{0, 0, 0, 0, 0, 0, 0, 0, 0};
};

struct ChainJoint {
  std::string name;
  std::string child_link;
  JointKind kind = JointKind::revolute;
  double lower = 0, upper = 0;        // continuous: [-pi, pi] (no position limit in the URDF)
  double velocity = 0, effort = 0;    // the URDF's <limit velocity effort>; 0 where it gives none
  bool has_limit = false;             // the joint has a <limit> element
  std::array<double, 3> axis{0, 0, 1};
  Transform origin;                   // from the previous movable joint's frame (or the base)
  std::array<double, 3> exact_axis{0, 0, 1};  // axis and origin snapped at kDynamicsSnap only
  Transform exact_origin;
  std::vector<std::string> folded;    // fixed joints folded into origin, in order
  Inertial body;                      // the body this joint moves, in this joint's frame
  std::vector<std::string> body_links;     // the links merged into body (child_link first)
  std::vector<std::string> no_inertial;    // those of body_links without an <inertial>
};

struct Chain {
  std::string robot;
  std::string source;  // base name of the URDF file
  std::string base;
  std::string tip;
  std::vector<ChainJoint> joints;
  Transform tip_offset;                 // from the last movable joint's frame to the tip link
  Transform exact_tip_offset;           // the same, snapped at kDynamicsSnap only
  std::vector<std::string> tip_folded;  // fixed joints folded into tip_offset
  std::string model_fingerprint;        // of the model it came from (model_fingerprint.hpp); "" when not set
  std::string model_text;               // the canonical text that fingerprint digests; "" when not set
};

// The chain base -> tip of `model`; `source` names the URDF in messages. Refuses unknown links
// (listing the model's links), a tip not below the base (saying to swap them when the chain is
// given tip-first), mimic, floating and planar joints, zero axes, missing or inverted limits,
// and chains without a movable joint.
Chain extract_chain(const urdf::ModelInterface &model, const std::string &source, const std::string &base,
                    const std::string &tip);

// Refuses a xacro file (<xacro:...> elements, or ${...}/$(...) with xmlns:xacro, in `text`, read
// from `path`), saying how to expand it: urdfdom would read it as a robot without its macros.
void refuse_xacro(const std::string &text, const std::string &path);

// Refuses a chain of more than `max_joints` movable joints (a plugin's limit), naming the first
// joint past the limit and the link a shorter chain could end at. max_joints >= 1.
void check_joint_count(const Chain &chain, std::size_t max_joints);

// For the dynamics: refuses negative or non-finite masses, non-finite or non-symmetric-positive
// inertias (a principal moment below zero), naming the link.
void check_inertials(const urdf::ModelInterface &model, const Chain &chain);

}  // namespace kiln::robotgen
