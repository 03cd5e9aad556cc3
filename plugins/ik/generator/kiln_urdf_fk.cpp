// kiln-urdf-fk: reads a URDF, walks the serial chain from --base to --tip and writes a C++/CUDA
// header with that chain's forward kinematics (and geometric Jacobian), usable from host code
// and from device code (__host__ __device__ under nvcc).
//
//   kiln-urdf-fk ROBOT.urdf --base LINK --tip LINK -o kiln_fk_chain.cuh [--namespace kiln_fk]
//
// What goes into the header (see the header's own comment for its API):
//   - each movable joint's fixed transform from the previous movable joint (joint origin,
//     xyz + rpy as a rotation matrix and a translation), with every fixed joint in between
//     folded into the next movable joint's transform;
//   - the joint axes, types (revolute, continuous, prismatic), limits and names, the dof;
//   - the tip pose at q = 0, composed from the transforms in double (a known value of fk);
//   - the fixed offset from the last movable joint to the tip link;
//   - straight-line FK code with the numbers as literals (terms with an exact 0 dropped).
// Refused, with a message naming the culprit: an unreadable or invalid URDF, an unknown link
// (the message lists the links there are), a tip that is not below the base, mimic joints,
// floating/planar joints, a chain without movable joints.
//
// The output is deterministic: the same URDF bytes and arguments give the same header bytes.
// It names the input file by its base name only: no directory, no time stamp, no user, so
// the header's bytes (which key the plugin artifact) do not depend on where it was built.
#include <urdf_model/model.h>
#include <urdf_parser/urdf_parser.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

constexpr const char *kGeneratorVersion = "kiln-urdf-fk 2";
// Rotation entries within this of 0 or +-1 are written as exactly 0 or +-1 (URDFs write pi/2
// as 1.57079632679, whose cosine is 4.9e-12): an error far below float resolution, and the
// FK code drops the zero terms. Translations within 1e-12 m of 0 are written as 0.
constexpr double kRotationSnap = 1e-9;
constexpr double kTranslationSnap = 1e-12;
constexpr double kPi = 3.14159265358979323846;

class GeneratorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Transform {
  std::array<double, 9> R{1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major
  std::array<double, 3> t{0, 0, 0};
};

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

enum class JointKind { revolute = 0, continuous = 1, prismatic = 2 };

const char *kind_name(JointKind kind) {
  switch (kind) {
    case JointKind::revolute: return "revolute";
    case JointKind::continuous: return "continuous";
    case JointKind::prismatic: return "prismatic";
  }
  return "?";
}

struct ChainJoint {
  std::string name;
  std::string child_link;
  JointKind kind = JointKind::revolute;
  double lower = 0, upper = 0;
  std::array<double, 3> axis{0, 0, 1};
  Transform origin;                     // from the previous movable joint's frame (or the base)
  std::vector<std::string> folded;      // fixed joints folded into origin, in order
};

struct Chain {
  std::string robot;
  std::string source;  // base name of the URDF file
  std::string base;
  std::string tip;
  std::vector<ChainJoint> joints;
  Transform tip_offset;                 // from the last movable joint's frame to the tip link
  std::vector<std::string> tip_folded;  // fixed joints folded into tip_offset
};

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

std::string link_list(const urdf::ModelInterface &model) {
  std::vector<std::string> names;
  for (const auto &entry : model.links_) names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string &name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
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
    const Transform origin = from_pose(joint->parent_to_joint_origin_transform);
    if (joint->type == urdf::Joint::FIXED) {
      pending = compose(pending, origin);
      pending_names.push_back(joint->name);
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
    snap(out.origin);
    out.folded = pending_names;
    chain.joints.push_back(out);
    pending = Transform{};
    pending_names.clear();
  }
  if (chain.joints.empty()) {
    throw GeneratorError("the chain " + base + " -> " + tip + " in " + source + " has no movable joint");
  }
  chain.tip_offset = pending;
  snap(chain.tip_offset);
  chain.tip_folded = pending_names;
  return chain;
}

// ---------------------------------------------------------------------------------------------
// Emitting.

// The shortest decimal form that reads back as the same double, always with a '.' or an 'e'.
std::string number(double value) {
  if (value == 0) return "0.0";
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  std::string text = buffer;
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

std::string lit(double value) { return "static_cast<T>(" + number(value) + ")"; }

// A C string literal (names are identifiers in practice; escape anything else).
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\%03o", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A comment-safe copy of text (no "*/", no newlines).
std::string comment_safe(const std::string &text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c == '*' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "* ";
    } else {
      out += c;
    }
  }
  return out;
}

// sum of coefficient * symbol, dropping exact zeros; "" when every term is zero.
std::string linear(const std::vector<std::pair<double, std::string>> &terms) {
  std::string out;
  for (const auto &term : terms) {
    if (term.first == 0) continue;
    std::string piece;
    bool negative = false;
    if (term.first == 1) {
      piece = term.second;
    } else if (term.first == -1) {
      piece = term.second;
      negative = true;
    } else {
      piece = term.second + " * " + lit(term.first);
    }
    if (out.empty()) {
      out = negative ? "-" + piece : piece;
    } else {
      out += negative ? " - " + piece : " + " + piece;
    }
  }
  return out;
}

class Body {
 public:
  explicit Body(int indent) : indent_(indent) {}
  void line(const std::string &text) { out_ << std::string(static_cast<std::size_t>(indent_), ' ') << text << '\n'; }
  void open(const std::string &text) {
    line(text);
    indent_ += 2;
  }
  void close(const std::string &text = "}") {
    indent_ -= 2;
    line(text);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_;
};

std::string r(int row, int col) { return "r" + std::to_string(3 * row + col); }

// Running transform (r0..r8 row-major rotation, x0..x2 position) <- running * fixed.
void emit_fixed(Body &body, const Transform &fixed, bool first) {
  if (first) {
    // The running transform starts as the identity: it simply becomes the fixed one.
    std::string line = "T ";
    for (int i = 0; i < 9; ++i) line += "r" + std::to_string(i) + " = " + lit(fixed.R[i]) + (i < 8 ? ", " : ";");
    body.line(line);
    body.line("T x0 = " + lit(fixed.t[0]) + ", x1 = " + lit(fixed.t[1]) + ", x2 = " + lit(fixed.t[2]) + ";");
    return;
  }
  if (is_identity(fixed)) return;
  for (int i = 0; i < 3; ++i) {
    const std::string sum = linear({{fixed.t[0], r(i, 0)}, {fixed.t[1], r(i, 1)}, {fixed.t[2], r(i, 2)}});
    if (!sum.empty()) body.line("x" + std::to_string(i) + " += " + sum + ";");
  }
  const Transform identity;
  if (fixed.R == identity.R) return;
  body.open("{");
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      std::string sum = linear({{fixed.R[j], r(i, 0)}, {fixed.R[3 + j], r(i, 1)}, {fixed.R[6 + j], r(i, 2)}});
      if (sum.empty()) sum = "static_cast<T>(0.0)";
      body.line("const T n" + std::to_string(3 * i + j) + " = " + sum + ";");
    }
  }
  std::string line;
  for (int i = 0; i < 9; ++i) line += "r" + std::to_string(i) + " = n" + std::to_string(i) + ";" + (i < 8 ? " " : "");
  body.line(line);
  body.close();
}

// The world (base-frame) axis of joint j: rotation columns combined by the joint's axis.
std::string world_axis(const ChainJoint &joint, int row) {
  return linear({{joint.axis[0], r(row, 0)}, {joint.axis[1], r(row, 1)}, {joint.axis[2], r(row, 2)}});
}

void emit_motion(Body &body, const ChainJoint &joint, int index) {
  const std::string qi = "q[" + std::to_string(index) + "]";
  if (joint.kind == JointKind::prismatic) {
    for (int i = 0; i < 3; ++i) {
      body.line("x" + std::to_string(i) + " += (" + world_axis(joint, i) + ") * " + qi + ";");
    }
    return;
  }
  body.open("{");
  // Axis along +-x, +-y or +-z: rotate the two other columns; any other axis: Rodrigues.
  int axis_index = -1;
  double sign = 1;
  for (int k = 0; k < 3; ++k) {
    if (std::fabs(joint.axis[k]) == 1.0) {
      axis_index = k;
      sign = joint.axis[k];
    }
  }
  if (axis_index >= 0) {
    body.line("T s, c;");
    body.line(std::string("sincos_(") + (sign < 0 ? "-" : "") + qi + ", s, c);");
    // R * rot(e_k, a): columns u = (k+1)%3, v = (k+2)%3: u' = c u + s v, v' = -s u + c v.
    const int u = (axis_index + 1) % 3, v = (axis_index + 2) % 3;
    for (int i = 0; i < 3; ++i) {
      body.line("const T n" + std::to_string(2 * i) + " = " + r(i, u) + " * c + " + r(i, v) + " * s;");
      body.line("const T n" + std::to_string(2 * i + 1) + " = " + r(i, v) + " * c - " + r(i, u) + " * s;");
    }
    for (int i = 0; i < 3; ++i) {
      body.line(r(i, u) + " = n" + std::to_string(2 * i) + "; " + r(i, v) + " = n" + std::to_string(2 * i + 1) + ";");
    }
  } else {
    const double ax = joint.axis[0], ay = joint.axis[1], az = joint.axis[2];
    body.line("T s, c;");
    body.line("sincos_(" + qi + ", s, c);");
    body.line("const T v = static_cast<T>(1.0) - c;");
    // Rodrigues: rot = c I + s [a]x + (1 - c) a a^T.
    const std::string a[3] = {lit(ax), lit(ay), lit(az)};
    body.line("const T m0 = c + v * " + lit(ax * ax) + ", m1 = v * " + lit(ax * ay) + " - s * " + a[2] +
              ", m2 = v * " + lit(ax * az) + " + s * " + a[1] + ";");
    body.line("const T m3 = v * " + lit(ax * ay) + " + s * " + a[2] + ", m4 = c + v * " + lit(ay * ay) +
              ", m5 = v * " + lit(ay * az) + " - s * " + a[0] + ";");
    body.line("const T m6 = v * " + lit(ax * az) + " - s * " + a[1] + ", m7 = v * " + lit(ay * az) + " + s * " +
              a[0] + ", m8 = c + v * " + lit(az * az) + ";");
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        body.line("const T n" + std::to_string(3 * i + j) + " = " + r(i, 0) + " * m" + std::to_string(j) + " + " +
                  r(i, 1) + " * m" + std::to_string(3 + j) + " + " + r(i, 2) + " * m" + std::to_string(6 + j) + ";");
      }
    }
    std::string line;
    for (int i = 0; i < 9; ++i) line += "r" + std::to_string(i) + " = n" + std::to_string(i) + ";" + (i < 8 ? " " : "");
    body.line(line);
  }
  body.close();
}

std::string emit_fk(const Chain &chain, bool jacobian) {
  Body body(4);
  const int n = static_cast<int>(chain.joints.size());
  if (jacobian) body.line("T wz[" + std::to_string(3 * n) + "], wo[" + std::to_string(3 * n) + "];");
  for (int j = 0; j < n; ++j) {
    const ChainJoint &joint = chain.joints[static_cast<std::size_t>(j)];
    body.line("// joint " + std::to_string(j) + ": " + comment_safe(joint.name) + " (" + kind_name(joint.kind) + ")");
    emit_fixed(body, joint.origin, j == 0);
    if (jacobian) {
      for (int i = 0; i < 3; ++i) {
        body.line("wz[" + std::to_string(3 * j + i) + "] = " + world_axis(joint, i) + "; wo[" +
                  std::to_string(3 * j + i) + "] = x" + std::to_string(i) + ";");
      }
    }
    emit_motion(body, joint, j);
  }
  body.line("// tip: " + comment_safe(chain.tip));
  emit_fixed(body, chain.tip_offset, false);
  body.line("p[0] = x0; p[1] = x1; p[2] = x2;");
  body.line("R[0] = r0; R[1] = r1; R[2] = r2; R[3] = r3; R[4] = r4; R[5] = r5; R[6] = r6; R[7] = r7; R[8] = r8;");
  if (jacobian) {
    for (int j = 0; j < n; ++j) {
      const ChainJoint &joint = chain.joints[static_cast<std::size_t>(j)];
      const auto z = [&](int i) { return "wz[" + std::to_string(3 * j + i) + "]"; };
      const auto d = [&](int i) { return "(x" + std::to_string(i) + " - wo[" + std::to_string(3 * j + i) + "])"; };
      if (joint.kind == JointKind::prismatic) {
        body.line("J[" + std::to_string(6 * j + 0) + "] = " + z(0) + "; J[" + std::to_string(6 * j + 1) + "] = " + z(1) +
                  "; J[" + std::to_string(6 * j + 2) + "] = " + z(2) + ";");
        body.line("J[" + std::to_string(6 * j + 3) + "] = static_cast<T>(0.0); J[" + std::to_string(6 * j + 4) +
                  "] = static_cast<T>(0.0); J[" + std::to_string(6 * j + 5) + "] = static_cast<T>(0.0);");
      } else {
        body.line("J[" + std::to_string(6 * j + 0) + "] = " + z(1) + " * " + d(2) + " - " + z(2) + " * " + d(1) + ";");
        body.line("J[" + std::to_string(6 * j + 1) + "] = " + z(2) + " * " + d(0) + " - " + z(0) + " * " + d(2) + ";");
        body.line("J[" + std::to_string(6 * j + 2) + "] = " + z(0) + " * " + d(1) + " - " + z(1) + " * " + d(0) + ";");
        body.line("J[" + std::to_string(6 * j + 3) + "] = " + z(0) + "; J[" + std::to_string(6 * j + 4) + "] = " + z(1) +
                  "; J[" + std::to_string(6 * j + 5) + "] = " + z(2) + ";");
      }
    }
  }
  return body.str();
}

std::string emit_transform_comment(const Transform &t) {
  std::ostringstream out;
  out << "R = [" << number(t.R[0]) << " " << number(t.R[1]) << " " << number(t.R[2]) << "; " << number(t.R[3]) << " "
      << number(t.R[4]) << " " << number(t.R[5]) << "; " << number(t.R[6]) << " " << number(t.R[7]) << " "
      << number(t.R[8]) << "], t = (" << number(t.t[0]) << ", " << number(t.t[1]) << ", " << number(t.t[2]) << ")";
  return out.str();
}

std::uint64_t fnv1a(const std::string &text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string emit_header(const Chain &chain, const std::string &ns) {
  const std::size_t n = chain.joints.size();
  std::ostringstream s;  // the struct; hashed into the inline namespace's name
  s << "struct Chain {\n";
  s << "  static constexpr int kDof = " << n << ";\n";
  s << "  static constexpr const char *kGenerator = " << quoted(kGeneratorVersion) << ";\n";
  s << "  static constexpr const char *kSource = " << quoted(chain.source) << ";\n";
  s << "  static constexpr const char *kRobot = " << quoted(chain.robot) << ";\n";
  s << "  static constexpr const char *kBaseLink = " << quoted(chain.base) << ";\n";
  s << "  static constexpr const char *kTipLink = " << quoted(chain.tip) << ";\n";
  s << "  // Joint types: 0 revolute, 1 continuous, 2 prismatic (as KILN_IK_JOINT_* in kiln/ext/ik.h).\n";
  s << "  static constexpr int kRevolute = 0, kContinuous = 1, kPrismatic = 2;\n";
  const auto list = [&](const std::string &type, const std::string &name, auto &&item) {
    s << "  static constexpr " << type << (type.back() == '*' ? "" : " ") << name << "[kDof] = {";
    for (std::size_t j = 0; j < n; ++j) s << (j ? ", " : "") << item(chain.joints[j]);
    s << "};\n";
  };
  list("const char *", "kJointNames", [](const ChainJoint &j) { return quoted(j.name); });
  list("int", "kJointTypes", [](const ChainJoint &j) { return std::to_string(static_cast<int>(j.kind)); });
  s << "  // Limits in rad (revolute, continuous: [-pi, pi]) or m (prismatic).\n";
  list("double", "kLower", [](const ChainJoint &j) { return number(j.lower); });
  list("double", "kUpper", [](const ChainJoint &j) { return number(j.upper); });
  s << "  // Unit joint axes in each joint's frame.\n";
  s << "  static constexpr double kAxes[kDof][3] = {";
  for (std::size_t j = 0; j < n; ++j) {
    const auto &a = chain.joints[j].axis;
    s << (j ? ", " : "") << "{" << number(a[0]) << ", " << number(a[1]) << ", " << number(a[2]) << "}";
  }
  s << "};\n";
  // Every joint's motion is the identity at q = 0, so the tip pose there is the product of the
  // fixed transforms, composed here in double and not by fk's generated code: a known value that
  // the IK plugin's self-test compares fk with.
  Transform zero;
  for (const ChainJoint &joint : chain.joints) zero = compose(zero, joint.origin);
  zero = compose(zero, chain.tip_offset);
  s << "  // The tip pose at q = 0, composed by the generator from the joint origins (not by fk): a check of fk.\n";
  s << "  static constexpr double kTipAtZeroPosition[3] = {" << number(zero.t[0]) << ", " << number(zero.t[1]) << ", "
    << number(zero.t[2]) << "};\n";
  s << "  static constexpr double kTipAtZeroRotation[9] = {";
  for (int i = 0; i < 9; ++i) s << (i ? ", " : "") << number(zero.R[static_cast<std::size_t>(i)]);
  s << "};\n\n";
  s << "  // Tip pose in the base frame: p (3), R (9, row-major; columns are the tip's axes).\n";
  s << "  template <class T>\n";
  s << "  static KILN_FK_HD void fk(const T *q, T *p, T *R) {\n";
  s << emit_fk(chain, false);
  s << "  }\n\n";
  s << "  // As fk, plus the geometric Jacobian J (6 x kDof, column-major: J[6 * j + i]); rows 0-2:\n";
  s << "  // d p / d q_j, rows 3-5: angular velocity per unit q_j, both in the base frame.\n";
  s << "  template <class T>\n";
  s << "  static KILN_FK_HD void fk_jacobian(const T *q, T *p, T *R, T *J) {\n";
  s << emit_fk(chain, true);
  s << "  }\n\n";
  s << " private:\n";
  s << "  static KILN_FK_HD void sincos_(float a, float &s, float &c) {\n";
  s << "#if defined(__CUDA_ARCH__)\n";
  s << "    ::sincosf(a, &s, &c);\n";
  s << "#else\n";
  s << "    s = std::sin(a);\n";
  s << "    c = std::cos(a);\n";
  s << "#endif\n";
  s << "  }\n";
  s << "  static KILN_FK_HD void sincos_(double a, double &s, double &c) {\n";
  s << "#if defined(__CUDA_ARCH__)\n";
  s << "    ::sincos(a, &s, &c);\n";
  s << "#else\n";
  s << "    s = std::sin(a);\n";
  s << "    c = std::cos(a);\n";
  s << "#endif\n";
  s << "  }\n";
  s << "};\n";
  const std::string body = s.str();
  char tag[32];
  std::snprintf(tag, sizeof tag, "chain_%016llx", static_cast<unsigned long long>(fnv1a(body)));

  std::ostringstream h;
  h << "// Generated by " << kGeneratorVersion << " from " << comment_safe(chain.source) << " (robot '"
    << comment_safe(chain.robot) << "'): chain " << comment_safe(chain.base) << " -> " << comment_safe(chain.tip)
    << ", " << n << " joints. Do not edit.\n";
  h << "//\n";
  h << "// Forward kinematics of one serial chain for host and device code (__host__ __device__ under\n";
  h << "// nvcc, plain inline otherwise), templated on the scalar type (float, double):\n";
  h << "//   " << ns << "::Chain::fk(q, p, R)              tip position p[3] and rotation R[9] (row-major)\n";
  h << "//   " << ns << "::Chain::fk_jacobian(q, p, R, J)  the same plus the geometric Jacobian J[6 * kDof]\n";
  h << "// q holds kDof joint values (rad or m, chain order). Metadata: kDof, kJointNames, kJointTypes,\n";
  h << "// kLower, kUpper, kAxes, kTipAtZeroPosition, kTipAtZeroRotation, kRobot, kBaseLink, kTipLink,\n";
  h << "// kSource (host code only).\n";
  h << "// One generated chain header per translation unit; the inline namespace (a hash of the\n";
  h << "// contents) keeps different chains in different translation units apart.\n";
  h << "// Rotation entries within " << number(kRotationSnap) << " of 0 or +-1 are written as exact 0 or +-1.\n";
  h << "//\n";
  h << "// Chain (each joint's transform from the previous joint's frame, fixed joints folded in):\n";
  for (std::size_t j = 0; j < n; ++j) {
    const ChainJoint &joint = chain.joints[j];
    h << "//   " << j << " " << comment_safe(joint.name) << " (" << kind_name(joint.kind) << ", axis " << number(joint.axis[0])
      << " " << number(joint.axis[1]) << " " << number(joint.axis[2]) << ", [" << number(joint.lower) << ", "
      << number(joint.upper) << "]) -> " << comment_safe(joint.child_link) << "\n";
    if (!joint.folded.empty()) {
      h << "//       folds fixed:";
      for (const std::string &name : joint.folded) h << " " << comment_safe(name);
      h << "\n";
    }
    h << "//       " << emit_transform_comment(joint.origin) << "\n";
  }
  h << "//   tip " << comment_safe(chain.tip);
  if (!chain.tip_folded.empty()) {
    h << " (folds fixed:";
    for (const std::string &name : chain.tip_folded) h << " " << comment_safe(name);
    h << ")";
  }
  h << "\n//       " << emit_transform_comment(chain.tip_offset) << "\n";
  h << "#pragma once\n\n";
  h << "#ifdef KILN_FK_CHAIN_TAG\n";
  h << "#error \"kiln_fk_chain: a translation unit may include only one generated chain header\"\n";
  h << "#endif\n";
  h << "#define KILN_FK_CHAIN_TAG " << tag << "\n\n";
  h << "#include <cmath>\n\n";
  h << "#ifndef KILN_FK_HD\n";
  h << "#if defined(__CUDACC__)\n";
  h << "#define KILN_FK_HD __host__ __device__ __forceinline__\n";
  h << "#else\n";
  h << "#define KILN_FK_HD inline\n";
  h << "#endif\n";
  h << "#endif\n\n";
  h << "namespace " << ns << " {\n";
  h << "inline namespace " << tag << " {\n\n";
  h << body;
  h << "\n}  // namespace " << tag << "\n";
  h << "}  // namespace " << ns << "\n";
  return h.str();
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw GeneratorError("cannot read '" + path + "'");
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw GeneratorError("cannot read '" + path + "'");
  return out.str();
}

// Write through a temporary file and rename: a build never sees a half-written header.
void write_file(const std::string &path, const std::string &text) {
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw GeneratorError("cannot write '" + temporary + "'");
    out << text;
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      throw GeneratorError("cannot write '" + temporary + "'");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw GeneratorError("cannot rename '" + temporary + "' to '" + path + "'");
  }
}

bool valid_namespace(const std::string &name) {
  if (name.empty()) return false;
  std::size_t i = 0;
  while (i < name.size()) {
    const char c = name[i];
    const bool start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!start) return false;
    while (i < name.size() && name[i] != ':') {
      const char d = name[i];
      if (!((d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') || (d >= '0' && d <= '9') || d == '_')) return false;
      ++i;
    }
    if (i < name.size()) {
      if (name.compare(i, 2, "::") != 0 || i + 2 >= name.size()) return false;
      i += 2;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln-urdf-fk: write the forward kinematics of a URDF serial chain as a C++/CUDA header"};
  std::string input, base, tip, output, ns = "kiln_fk";
  app.add_option("urdf", input, "the robot's URDF file")->required();
  app.add_option("--base", base, "the chain's base link (frame of the results)")->required();
  app.add_option("--tip", tip, "the chain's tip link (the frame placed)")->required();
  app.add_option("-o,--output", output, "the header to write")->required();
  app.add_option("--namespace", ns, "C++ namespace of the generated code (default kiln_fk)");
  app.set_version_flag("--version", kGeneratorVersion);
  CLI11_PARSE(app, argc, argv);

  try {
    if (!valid_namespace(ns)) throw GeneratorError("--namespace '" + ns + "' is not a C++ namespace name");
    const std::string text = read_file(input);
    const std::size_t slash = input.find_last_of('/');
    const std::string source = slash == std::string::npos ? input : input.substr(slash + 1);
    urdf::ModelInterfaceSharedPtr model = urdf::parseURDF(text);
    if (!model) {
      throw GeneratorError("'" + input + "' is not a valid URDF (the parser's reason is printed above)");
    }
    const Chain chain = extract_chain(*model, source, base, tip);
    write_file(output, emit_header(chain, ns));
  } catch (const std::exception &error) {
    std::cerr << "kiln-urdf-fk: error: " << error.what() << '\n';
    return 1;
  }
  return 0;
}
