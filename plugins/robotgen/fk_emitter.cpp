#include "fk_emitter.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "emit_text.hpp"

namespace kiln::robotgen {
namespace {

constexpr const char *kGeneratorVersion = kFkGeneratorVersion;

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

}  // namespace

std::string emit_fk_header(const Chain &chain, const std::string &ns) {
  const std::size_t n = chain.joints.size();
  std::ostringstream s;  // the struct; hashed into the inline namespace's name
  open_chain_struct(s, chain, kGeneratorVersion, "as KILN_IK_JOINT_* in kiln/ext/ik.h");
  const auto list = [&](const std::string &type, const std::string &name, auto &&item) {
    joint_list(s, chain, type, name, item);
  };
  list("const char *", "kJointNames", [](const ChainJoint &j) { return quoted(j.name); });
  list("int", "kJointTypes", [](const ChainJoint &j) { return std::to_string(static_cast<int>(j.kind)); });
  s << "  // Limits in rad (revolute, continuous: [-pi, pi]) or m (prismatic).\n";
  list("double", "kLower", [](const ChainJoint &j) { return number(j.lower); });
  list("double", "kUpper", [](const ChainJoint &j) { return number(j.upper); });
  s << "  // The URDF's velocity (rad/s or m/s) and effort (N m or N) limits; 0 where it gives none.\n";
  list("double", "kVelocityLimit", [](const ChainJoint &j) { return number(j.velocity); });
  list("double", "kEffortLimit", [](const ChainJoint &j) { return number(j.effort); });
  const auto numbers = [&](const auto &values) {
    std::string text = "{";
    for (std::size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + number(values[i]);
    return text + "}";
  };
  const auto table = [&](const std::string &name, const std::string &size, auto &&row) {
    s << "  static constexpr double " << name << "[kDof][" << size << "] = {";
    for (std::size_t j = 0; j < n; ++j) s << (j ? ", " : "") << numbers(row(chain.joints[j]));
    s << "};\n";
  };
  s << "  // Unit joint axes in each joint's frame.\n";
  table("kAxes", "3", [](const ChainJoint &j) { return j.axis; });
  s << "  // Each joint's frame at q = 0 in the previous joint's frame (the base's for joint 0), fixed\n";
  s << "  // joints folded in, as fk composes it: position, rotation (row-major); then the tip's in the\n";
  s << "  // last joint's frame.\n";
  table("kOriginPosition", "3", [](const ChainJoint &j) { return j.origin.t; });
  table("kOriginRotation", "9", [](const ChainJoint &j) { return j.origin.R; });
  s << "  static constexpr double kTipOffsetPosition[3] = " << numbers(chain.tip_offset.t) << ";\n";
  s << "  static constexpr double kTipOffsetRotation[9] = " << numbers(chain.tip_offset.R) << ";\n";
  // Every joint's motion is the identity at q = 0, so the tip pose there is the product of the
  // fixed transforms, composed here in double and not by fk's generated code: a known value that
  // the IK plugin's self-test compares fk with.
  Transform zero;
  for (const ChainJoint &joint : chain.joints) zero = compose(zero, joint.origin);
  zero = compose(zero, chain.tip_offset);
  s << "  // The tip pose at q = 0, composed by the generator from the joint origins (not by fk): a check of fk.\n";
  s << "  static constexpr double kTipAtZeroPosition[3] = " << numbers(zero.t) << ";\n";
  s << "  static constexpr double kTipAtZeroRotation[9] = " << numbers(zero.R) << ";\n\n";
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
  s << sincos_helper("KILN_FK_HD", "double", "sincos");
  s << "};\n";
  const std::string body = s.str();
  char tag[32];
  std::snprintf(tag, sizeof tag, "chain_%016llx", static_cast<unsigned long long>(fnv1a(body)));

  std::ostringstream h;
  h << provenance_line(kGeneratorVersion, chain.source, chain.robot, chain.base, chain.tip, n);
  h << "//\n";
  h << "// Forward kinematics of one serial chain for host and device code (__host__ __device__ under\n";
  h << "// nvcc, plain inline otherwise), templated on the scalar type (float, double):\n";
  h << "//   " << ns << "::Chain::fk(q, p, R)              tip position p[3] and rotation R[9] (row-major)\n";
  h << "//   " << ns << "::Chain::fk_jacobian(q, p, R, J)  the same plus the geometric Jacobian J[6 * kDof]\n";
  h << "// q holds kDof joint values (rad or m, chain order). Metadata: kDof, kJointNames, kJointTypes,\n";
  h << "// kLower, kUpper, kVelocityLimit, kEffortLimit, kAxes, kOriginPosition, kOriginRotation,\n";
  h << "// kTipOffsetPosition, kTipOffsetRotation, kTipAtZeroPosition, kTipAtZeroRotation, kRobot,\n";
  h << "// kBaseLink, kTipLink, kSource (host code only).\n";
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
  h << namespaced_body("KILN_FK_HD", ns, tag, body);
  h << model_record(chain);
  return h.str();
}

}  // namespace kiln::robotgen
