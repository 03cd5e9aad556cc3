#include "urdf_chain.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "inertial.hpp"

namespace kiln::robotgen {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::string link_list(const urdf::ModelInterface &model) {
  std::vector<std::string> names;
  for (const auto &entry : model.links_) names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string &name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Whether `link` lies below `ancestor` (walking parent joints up from `link` reaches it).
bool is_below(const urdf::ModelInterface &model, const std::string &link, const std::string &ancestor) {
  urdf::LinkConstSharedPtr current = model.getLink(link);
  while (current && current->parent_joint) {
    if (current->parent_joint->parent_link_name == ancestor) return true;
    current = model.getLink(current->parent_joint->parent_link_name);
  }
  return false;
}

// The child link's inertial (or none) as the start of a body, noting links without one.
void start_body(ChainJoint &joint, const urdf::Link &link) {
  joint.body = inertial_of(link);
  joint.body_links = {link.name};
  if (!link.inertial) joint.no_inertial.push_back(link.name);
}

}  // namespace

Transform compose(const Transform &a, const Transform &b) {
  Transform out;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      double sum = 0;
      for (int k = 0; k < 3; ++k) sum += a.R[3 * i + k] * b.R[3 * k + j];
      out.R[3 * i + j] = sum;
    }
    double sum = a.t[i];
    for (int k = 0; k < 3; ++k) sum += a.R[3 * i + k] * b.t[k];
    out.t[i] = sum;
  }
  return out;
}

Transform from_pose(const urdf::Pose &pose) {
  double x = pose.rotation.x, y = pose.rotation.y, z = pose.rotation.z, w = pose.rotation.w;
  const double norm = std::sqrt(x * x + y * y + z * z + w * w);
  if (norm > 0) x /= norm, y /= norm, z /= norm, w /= norm;
  Transform out;
  out.R = {1 - 2 * (y * y + z * z), 2 * (x * y - z * w),     2 * (x * z + y * w),
           2 * (x * y + z * w),     1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
           2 * (x * z - y * w),     2 * (y * z + x * w),     1 - 2 * (x * x + y * y)};
  out.t = {pose.position.x, pose.position.y, pose.position.z};
  return out;
}

double snap(double value, double tolerance, bool unit) {
  if (std::fabs(value) < tolerance) return 0.0;
  if (unit && std::fabs(value - 1.0) < tolerance) return 1.0;
  if (unit && std::fabs(value + 1.0) < tolerance) return -1.0;
  return value;
}

void snap(Transform &transform) {
  for (double &value : transform.R) value = snap(value, kRotationSnap, true);
  for (double &value : transform.t) value = snap(value, kTranslationSnap, false);
}

bool is_identity(const Transform &transform) {
  const Transform identity;
  return transform.R == identity.R && transform.t == identity.t;
}

const char *urdf_type_name(int type) {
  switch (type) {
    case urdf::Joint::REVOLUTE: return "revolute";
    case urdf::Joint::CONTINUOUS: return "continuous";
    case urdf::Joint::PRISMATIC: return "prismatic";
    case urdf::Joint::FLOATING: return "floating";
    case urdf::Joint::PLANAR: return "planar";
    case urdf::Joint::FIXED: return "fixed";
    default: return "unknown";
  }
}

const char *kind_name(JointKind kind) {
  switch (kind) {
    case JointKind::revolute: return "revolute";
    case JointKind::continuous: return "continuous";
    case JointKind::prismatic: return "prismatic";
  }
  return "?";
}

Chain extract_chain(const urdf::ModelInterface &model, const std::string &source, const std::string &base,
                    const std::string &tip) {
  for (const std::string *name : {&base, &tip}) {
    if (model.links_.find(*name) == model.links_.end()) {
      throw GeneratorError("unknown link '" + *name + "' in " + source + " (robot '" + model.getName() +
                           "'); its links are: " + link_list(model));
    }
  }
  if (base == tip) throw GeneratorError("--base and --tip are the same link '" + base + "': the chain has no joints");

  // Walk up from the tip to the base.
  std::vector<urdf::JointSharedPtr> path;
  std::string link = tip;
  while (link != base) {
    const urdf::LinkConstSharedPtr current = model.getLink(link);
    if (!current || !current->parent_joint) {
      if (is_below(model, base, tip)) {
        throw GeneratorError("the chain is given tip-first: link '" + tip + "' is an ancestor of link '" + base +
                             "' in " + source + ": swap them (--base " + tip + " --tip " + base + ")");
      }
      throw GeneratorError("link '" + tip + "' is not below link '" + base + "' in " + source +
                           " (walking up from '" + tip + "' reached the root '" + link +
                           "'): pass a --base that is an ancestor of the --tip");
    }
    path.push_back(current->parent_joint);
    link = current->parent_joint->parent_link_name;
  }
  std::reverse(path.begin(), path.end());

  Chain chain;
  chain.robot = model.getName();
  chain.source = source;
  chain.base = base;
  chain.tip = tip;
  Transform pending;  // fixed transforms since the last movable joint
  std::vector<std::string> pending_names;
  for (const urdf::JointSharedPtr &joint : path) {
    const std::string where = "joint '" + joint->name + "' (" + joint->parent_link_name + " -> " +
                              joint->child_link_name + ") in " + source;
    if (joint->mimic) {
      throw GeneratorError(where + " is a mimic joint (it mimics '" + joint->mimic->joint_name +
                           "'): kiln-urdf-fk does not support mimic joints in the chain; choose a --tip above '" +
                           joint->child_link_name + "'");
    }
    const urdf::Link &child = *model.getLink(joint->child_link_name);
    const Transform origin = from_pose(joint->parent_to_joint_origin_transform);
    if (joint->type == urdf::Joint::FIXED) {
      pending = compose(pending, origin);
      pending_names.push_back(joint->name);
      // A link fixed to a moving body moves with it; before the first movable joint it is part
      // of the (immobile) base and carries no torque.
      if (!chain.joints.empty()) {
        ChainJoint &body = chain.joints.back();
        merge(body.body, inertial_of(child), pending);
        body.body_links.push_back(child.name);
        if (!child.inertial) body.no_inertial.push_back(child.name);
      }
      continue;
    }
    ChainJoint out;
    out.name = joint->name;
    out.child_link = joint->child_link_name;
    switch (joint->type) {
      case urdf::Joint::REVOLUTE: out.kind = JointKind::revolute; break;
      case urdf::Joint::CONTINUOUS: out.kind = JointKind::continuous; break;
      case urdf::Joint::PRISMATIC: out.kind = JointKind::prismatic; break;
      default:
        throw GeneratorError(where + " is of type " + urdf_type_name(joint->type) +
                             ": kiln-urdf-fk supports revolute, continuous, prismatic and fixed joints");
    }
    const double ax = joint->axis.x, ay = joint->axis.y, az = joint->axis.z;
    const double norm = std::sqrt(ax * ax + ay * ay + az * az);
    if (!(norm > 1e-12)) throw GeneratorError(where + " has a zero axis");
    out.axis = {snap(ax / norm, kRotationSnap, true), snap(ay / norm, kRotationSnap, true),
                snap(az / norm, kRotationSnap, true)};
    out.exact_axis = {snap(ax / norm, kDynamicsSnap, true), snap(ay / norm, kDynamicsSnap, true),
                      snap(az / norm, kDynamicsSnap, true)};
    if (joint->limits) {
      out.has_limit = true;
      out.velocity = joint->limits->velocity;
      out.effort = joint->limits->effort;
    }
    if (out.kind == JointKind::continuous) {
      out.lower = -kPi;
      out.upper = kPi;
    } else {
      if (!joint->limits) throw GeneratorError(where + " has no <limit>");
      out.lower = joint->limits->lower;
      out.upper = joint->limits->upper;
      if (!(out.lower <= out.upper) || !std::isfinite(out.lower) || !std::isfinite(out.upper)) {
        std::ostringstream text;
        text << where << " has limits [" << out.lower << ", " << out.upper << "]: lower must be <= upper";
        throw GeneratorError(text.str());
      }
    }
    out.origin = compose(pending, origin);
    out.exact_origin = out.origin;
    for (double &value : out.exact_origin.R) value = snap(value, kDynamicsSnap, true);
    for (double &value : out.exact_origin.t) value = snap(value, kDynamicsSnap, false);
    snap(out.origin);
    out.folded = pending_names;
    start_body(out, child);
    chain.joints.push_back(out);
    pending = Transform{};
    pending_names.clear();
  }
  if (chain.joints.empty()) {
    throw GeneratorError("the chain " + base + " -> " + tip + " in " + source + " has no movable joint");
  }
  chain.tip_offset = pending;
  chain.exact_tip_offset = pending;
  for (double &value : chain.exact_tip_offset.R) value = snap(value, kDynamicsSnap, true);
  for (double &value : chain.exact_tip_offset.t) value = snap(value, kDynamicsSnap, false);
  snap(chain.tip_offset);
  chain.tip_folded = pending_names;
  return chain;
}

void check_inertials(const urdf::ModelInterface &model, const Chain &chain) {
  for (const ChainJoint &joint : chain.joints) {
    for (const std::string &name : joint.body_links) {
      const urdf::LinkConstSharedPtr link = model.getLink(name);
      if (!link || !link->inertial) continue;
      const std::string problem = inertial_problem(*link->inertial);
      if (!problem.empty()) {
        throw GeneratorError("link '" + name + "' in " + chain.source + " (moved by joint '" + joint.name +
                             "') has " + problem + ": fix its <inertial>");
      }
    }
    if (!(joint.velocity >= 0) || !(joint.effort >= 0) || !std::isfinite(joint.velocity) ||
        !std::isfinite(joint.effort)) {
      std::ostringstream text;
      text << "joint '" << joint.name << "' in " << chain.source << " has <limit velocity=\"" << joint.velocity
           << "\" effort=\"" << joint.effort << "\">: both must be finite and >= 0";
      throw GeneratorError(text.str());
    }
  }
}

namespace {

// The text outside XML comments: a URDF may keep xacro's ${...} in commented-out elements
// (GATO's iiwa14.urdf does), which xacro left as they were and no parser reads.
std::string without_comments(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t open = text.find("<!--", at);
    if (open == std::string::npos) break;
    out.append(text, at, open - at);
    const std::size_t close = text.find("-->", open + 4);
    if (close == std::string::npos) return out;  // an unclosed comment runs to the end
    at = close + 3;
  }
  if (at < text.size()) out.append(text, at, std::string::npos);
  return out;
}

}  // namespace

void refuse_xacro(const std::string &whole_text, const std::string &path) {
  // xacro's output may keep the xmlns:xacro declaration: only macros or ${...}/$(...) left to
  // expand make it a xacro file still.
  const std::string text = without_comments(whole_text);
  const bool macros = text.find("<xacro:") != std::string::npos;
  const bool expressions = text.find("xmlns:xacro") != std::string::npos &&
                           (text.find("${") != std::string::npos || text.find("$(") != std::string::npos);
  if (!macros && !expressions) return;
  std::string urdf = path;
  const std::string suffix = ".xacro";
  if (urdf.size() > suffix.size() && urdf.compare(urdf.size() - suffix.size(), suffix.size(), suffix) == 0) {
    urdf.erase(urdf.size() - suffix.size());
  }
  if (urdf.size() < 5 || urdf.compare(urdf.size() - 5, 5, ".urdf") != 0) urdf += ".urdf";
  throw GeneratorError("'" + path + "' is a xacro file (it uses xacro macros), not a URDF: expand it first, e.g. "
                       "`xacro " + path + " > " + urdf + "`, and pass the .urdf");
}

void check_joint_count(const Chain &chain, std::size_t max_joints) {
  if (chain.joints.size() <= max_joints) return;
  const ChainJoint &first_extra = chain.joints[max_joints];
  const ChainJoint &last_kept = chain.joints[max_joints - 1];
  throw GeneratorError("the chain " + chain.base + " -> " + chain.tip + " in " + chain.source + " has " +
                       std::to_string(chain.joints.size()) + " movable joints; this plugin supports at most " +
                       std::to_string(max_joints) + " (joint '" + first_extra.name + "' is number " +
                       std::to_string(max_joints + 1) + "): choose a --tip at or above link '" +
                       last_kept.child_link + "', or split the chain");
}

}  // namespace kiln::robotgen
