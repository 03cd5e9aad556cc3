#include "model_fingerprint.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "fk_emitter.hpp"
#include "rnea_emitter.hpp"
#include "urdf_chain.hpp"

namespace kiln::robotgen {

namespace {

// Round-trip precision: equal numbers print alike, different ones differently.
std::string exact(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value == 0.0 ? 0.0 : value);  // -0 and 0 alike
  return text;
}

std::string pose_text(const urdf::Pose &pose) {
  double roll = 0, pitch = 0, yaw = 0;
  pose.rotation.getRPY(roll, pitch, yaw);
  return "xyz " + exact(pose.position.x) + " " + exact(pose.position.y) + " " + exact(pose.position.z) + " rpy " +
         exact(roll) + " " + exact(pitch) + " " + exact(yaw);
}

}  // namespace

std::string canonical_model_text(const urdf::ModelInterface &model, const std::string &base, const std::string &tip,
                                 const std::optional<std::array<double, 3>> &gravity) {
  std::ostringstream s;
  s << "kiln-model 1\n";
  s << "generators " << kFkGeneratorVersion << ", " << kRneaGeneratorVersion << "\n";
  s << "chain " << base << " -> " << tip << "\n";
  if (gravity) s << "gravity " << exact((*gravity)[0]) << " " << exact((*gravity)[1]) << " " << exact((*gravity)[2]) << "\n";
  // std::map: by name, whatever the order of the file.
  const std::map<std::string, urdf::LinkSharedPtr> links(model.links_.begin(), model.links_.end());
  for (const auto &[name, link] : links) {
    s << "link " << name;
    if (link && link->inertial) {
      const urdf::Inertial &i = *link->inertial;
      s << " inertial " << pose_text(i.origin) << " mass " << exact(i.mass) << " inertia " << exact(i.ixx) << " "
        << exact(i.ixy) << " " << exact(i.ixz) << " " << exact(i.iyy) << " " << exact(i.iyz) << " " << exact(i.izz);
    }
    s << "\n";
  }
  const std::map<std::string, urdf::JointSharedPtr> joints(model.joints_.begin(), model.joints_.end());
  for (const auto &[name, joint] : joints) {
    if (!joint) continue;
    s << "joint " << name << " " << urdf_type_name(joint->type) << " " << joint->parent_link_name << " -> "
      << joint->child_link_name << " " << pose_text(joint->parent_to_joint_origin_transform) << " axis "
      << exact(joint->axis.x) << " " << exact(joint->axis.y) << " " << exact(joint->axis.z);
    if (joint->limits) {
      const urdf::JointLimits &l = *joint->limits;
      s << " limit " << exact(l.lower) << " " << exact(l.upper) << " effort " << exact(l.effort) << " velocity "
        << exact(l.velocity);
    }
    if (joint->dynamics) s << " dynamics " << exact(joint->dynamics->damping) << " " << exact(joint->dynamics->friction);
    if (joint->mimic) {
      s << " mimic " << joint->mimic->joint_name << " " << exact(joint->mimic->multiplier) << " "
        << exact(joint->mimic->offset);
    }
    s << "\n";
  }
  return s.str();
}

std::string model_fingerprint(const std::string &text) {
  const XXH128_hash_t hash = XXH3_128bits(text.data(), text.size());
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return std::string("xxh128:") + hex;
}

}  // namespace kiln::robotgen
