// The RNEA in each body's own frame (Craig / Featherstone's "RNEA with 3-vectors"): body i's frame
// is joint i's frame after its motion, R_i and P_i place it in body i-1's frame (base: the chain's
// base frame). Forward: angular velocity w, angular acceleration dw and the linear acceleration a
// of the frame origin, with gravity entering as a base acceleration of -g. Per body, the force F
// and moment N (about the body origin) from mass m, first moment h = m c and rotational inertia
// I_o about the origin:
//   F = m a + dw x h + w x (w x h),   N = I_o dw + w x (I_o w) + h x a.
// Backward: F_i += R_{i+1} F_{i+1}, N_i += R_{i+1} N_{i+1} + P_{i+1} x (R_{i+1} F_{i+1});
// tau_i = axis . N_i (revolute) or axis . F_i (prismatic).
#include "rnea_emitter.hpp"

#include <cstdio>
#include <sstream>

#include "emit_text.hpp"
#include "inertial.hpp"

namespace kiln::robotgen {
namespace {

using Terms = std::vector<std::pair<double, std::string>>;
// A rotation entry as a combination of 1, cos q, sin q and 1 - cos q.
using Coef = std::array<double, 4>;

std::string idx(const std::string &name, int i) { return name + "[" + std::to_string(i) + "]"; }
std::string var(const std::string &name, int j) { return name + std::to_string(j); }

int principal_axis(const std::array<double, 3> &axis) {
  for (int k = 0; k < 3; ++k) {
    if (axis[static_cast<std::size_t>(k)] == 1.0 || axis[static_cast<std::size_t>(k)] == -1.0) return k;
  }
  return -1;
}

// Rot(axis, q) entry (row, col) over {1, c, s, v}; exactly 1 on a principal axis' own entry.
Coef motion_entry(const std::array<double, 3> &a, int row, int col) {
  const int k = principal_axis(a);
  if (k >= 0 && row == k && col == k) return {1, 0, 0, 0};
  const double skew[9] = {0, -a[2], a[1], a[2], 0, -a[0], -a[1], a[0], 0};
  const double outer = a[static_cast<std::size_t>(row)] * a[static_cast<std::size_t>(col)];
  return {0, row == col ? 1.0 : 0.0, skew[3 * row + col], k >= 0 ? 0.0 : outer};
}

// (v x c)_k for a runtime vector v and a constant c; (c x v)_k likewise.
Terms cross_vc(const std::string &v, const std::array<double, 3> &c, int k) {
  const int i = (k + 1) % 3, j = (k + 2) % 3;
  return {{c[static_cast<std::size_t>(j)], idx(v, i)}, {-c[static_cast<std::size_t>(i)], idx(v, j)}};
}
Terms cross_cv(const std::array<double, 3> &c, const std::string &v, int k) {
  const int i = (k + 1) % 3, j = (k + 2) % 3;
  return {{c[static_cast<std::size_t>(i)], idx(v, j)}, {-c[static_cast<std::size_t>(j)], idx(v, i)}};
}
Terms dot(const double *row, const std::string &v) { return {{row[0], idx(v, 0)}, {row[1], idx(v, 1)}, {row[2], idx(v, 2)}}; }
Terms concat(Terms a, const Terms &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
bool is_zero(const std::array<double, 3> &v) { return v[0] == 0 && v[1] == 0 && v[2] == 0; }

// R_j, P_j, then w_j, dw_j, a_j of body j from body j-1's (or the base's).
void emit_forward(Body &body, const ChainJoint &joint, int j) {
  const bool prismatic = joint.kind == JointKind::prismatic;
  const std::string R = var("R", j), P = var("P", j), w = var("w", j), dw = var("dw", j), a = var("a", j);
  const std::string qd = idx("qd", j), qdd = idx("qdd", j);
  const auto &ax = joint.exact_axis;
  const auto &Ro = joint.exact_origin.R;
  const auto &Po = joint.exact_origin.t;
  body.line("// joint " + std::to_string(j) + ": " + comment_safe(joint.name) + " (" + kind_name(joint.kind) + ")");
  // Body 0's position in the base never matters (the base does not move): no P0.
  body.line("T " + R + "[9], " + (j > 0 ? P + "[3], " : std::string()) + w + "[3], " + dw + "[3], " + a + "[3];");
  body.open("{");
  if (prismatic) {
    for (int e = 0; e < 9; ++e) body.line(idx(R, e) + " = " + lit(Ro[static_cast<std::size_t>(e)]) + ";");
    for (int k = 0; j > 0 && k < 3; ++k) {
      const double along = Ro[3 * k] * ax[0] + Ro[3 * k + 1] * ax[1] + Ro[3 * k + 2] * ax[2];
      body.line(idx(P, k) + " = " + linear_or_zero({{Po[static_cast<std::size_t>(k)], ""}, {along, idx("q", j)}}) + ";");
    }
  } else {
    body.line("T s, c;");
    body.line("sincos_(" + idx("q", j) + ", s, c);");
    if (principal_axis(ax) < 0) body.line("const T v = static_cast<T>(1.0) - c;");
    for (int row = 0; row < 3; ++row) {
      for (int col = 0; col < 3; ++col) {
        Coef sum{0, 0, 0, 0};
        for (int k = 0; k < 3; ++k) {
          const Coef m = motion_entry(ax, k, col);
          for (int b = 0; b < 4; ++b) sum[static_cast<std::size_t>(b)] += Ro[static_cast<std::size_t>(3 * row + k)] * m[static_cast<std::size_t>(b)];
        }
        body.line(idx(R, 3 * row + col) + " = " + linear_or_zero({{sum[0], ""}, {sum[1], "c"}, {sum[2], "s"}, {sum[3], "v"}}) + ";");
      }
    }
    for (int k = 0; j > 0 && k < 3; ++k) body.line(idx(P, k) + " = " + lit(Po[static_cast<std::size_t>(k)]) + ";");
  }
  if (j == 0) {
    // The base does not move: only gravity (as the base acceleration -g) reaches body 0.
    body.line("rot_t_(" + R + ", gn, " + a + ");");
    body.line(w + "[0] = " + w + "[1] = " + w + "[2] = static_cast<T>(0.0);");
    body.line(dw + "[0] = " + dw + "[1] = " + dw + "[2] = static_cast<T>(0.0);");
  } else {
    const std::string wp = var("w", j - 1), dwp = var("dw", j - 1), ap = var("a", j - 1);
    body.line("T t[3], u[3], e[3];");
    body.line("cross_(" + dwp + ", " + P + ", t);");
    body.line("cross_(" + wp + ", " + P + ", u);");
    body.line("cross_(" + wp + ", u, e);");
    body.line("t[0] += e[0] + " + ap + "[0]; t[1] += e[1] + " + ap + "[1]; t[2] += e[2] + " + ap + "[2];");
    body.line("rot_t_(" + R + ", t, " + a + ");");
    body.line("rot_t_(" + R + ", " + wp + ", " + w + ");");
    body.line("rot_t_(" + R + ", " + dwp + ", " + dw + ");");
  }
  // The joint's own motion: revolute adds w x (axis qd) + axis qdd to dw and axis qd to w;
  // prismatic adds 2 w x (axis qd) + axis qdd to a.
  const std::string target = prismatic ? a : dw;
  const std::string rate = prismatic ? "static_cast<T>(2.0) * " + qd : qd;
  for (int k = 0; k < 3; ++k) {
    if (j > 0) {
      const std::string coriolis = linear(cross_vc(w, ax, k));
      if (!coriolis.empty()) body.line(idx(target, k) + " += " + rate + " * (" + coriolis + ");");
    }
    if (ax[static_cast<std::size_t>(k)] != 0) body.line(idx(target, k) + " += " + linear({{ax[static_cast<std::size_t>(k)], qdd}}) + ";");
  }
  if (!prismatic) {
    for (int k = 0; k < 3; ++k) {
      if (ax[static_cast<std::size_t>(k)] != 0) body.line(idx(w, k) + " += " + linear({{ax[static_cast<std::size_t>(k)], qd}}) + ";");
    }
  }
  body.close();
}

// F_j, N_j of body j about its origin, in its frame.
void emit_body_force(Body &body, const ChainJoint &joint, int j) {
  const std::string F = var("F", j), N = var("N", j), w = var("w", j), dw = var("dw", j), a = var("a", j);
  const double m = joint.body.mass;
  const std::array<double, 3> h = first_moment(joint.body);
  const std::array<double, 9> I = inertia_about_origin(joint.body);
  body.line("// body " + std::to_string(j) + ": m " + number(m) + ", h (" + number(h[0]) + ", " + number(h[1]) + ", " +
            number(h[2]) + "), I_o (" + number(I[0]) + " " + number(I[1]) + " " + number(I[2]) + "; " + number(I[4]) + " " +
            number(I[5]) + "; " + number(I[8]) + ")");
  body.line("T " + F + "[3], " + N + "[3];");
  body.open("{");
  const bool has_h = !is_zero(h);
  const bool has_I = !(I[0] == 0 && I[1] == 0 && I[2] == 0 && I[4] == 0 && I[5] == 0 && I[8] == 0);
  if (has_h) {
    body.line("T wh[3], e[3];");
    for (int k = 0; k < 3; ++k) body.line(idx("wh", k) + " = " + linear_or_zero(cross_vc(w, h, k)) + ";");
    body.line("cross_(" + w + ", wh, e);");
  }
  for (int k = 0; k < 3; ++k) {
    const std::string sum = linear(concat({{m, idx(a, k)}}, has_h ? cross_vc(dw, h, k) : Terms{}));
    const std::string wwh = has_h ? idx("e", k) : "";
    body.line(idx(F, k) + " = " + (sum.empty() ? (wwh.empty() ? "static_cast<T>(0.0)" : wwh) : (wwh.empty() ? sum : sum + " + " + wwh)) + ";");
  }
  if (has_I) {
    body.line("T Iw[3], gy[3];");
    for (int k = 0; k < 3; ++k) body.line(idx("Iw", k) + " = " + linear_or_zero(dot(&I[static_cast<std::size_t>(3 * k)], w)) + ";");
    body.line("cross_(" + w + ", Iw, gy);");
  }
  for (int k = 0; k < 3; ++k) {
    const Terms terms = concat(has_I ? dot(&I[static_cast<std::size_t>(3 * k)], dw) : Terms{}, has_h ? cross_cv(h, a, k) : Terms{});
    const std::string sum = linear(terms);
    const std::string gyro = has_I ? idx("gy", k) : "";
    body.line(idx(N, k) + " = " + (sum.empty() ? (gyro.empty() ? "static_cast<T>(0.0)" : gyro) : (gyro.empty() ? sum : sum + " + " + gyro)) + ";");
  }
  body.close();
}

// F_j, N_j += what body j+1 passes on; tau_j.
void emit_backward(Body &body, const ChainJoint &joint, int j, int n) {
  const std::string F = var("F", j), N = var("N", j);
  if (j + 1 < n) {
    const std::string R = var("R", j + 1), P = var("P", j + 1);
    body.open("{");
    body.line("T rf[3], rn[3], pr[3];");
    body.line("rot_(" + R + ", " + var("F", j + 1) + ", rf);");
    body.line("rot_(" + R + ", " + var("N", j + 1) + ", rn);");
    body.line("cross_(" + P + ", rf, pr);");
    body.line(F + "[0] += rf[0]; " + F + "[1] += rf[1]; " + F + "[2] += rf[2];");
    body.line(N + "[0] += rn[0] + pr[0]; " + N + "[1] += rn[1] + pr[1]; " + N + "[2] += rn[2] + pr[2];");
    body.close();
  }
  const std::string along = joint.kind == JointKind::prismatic ? F : N;
  body.line(idx("tau", j) + " = " + linear_or_zero(dot(joint.exact_axis.data(), along)) + ";");
}

// A wrench the environment applies at the tip (force, then moment about the tip origin, in the
// tip frame) moved into the last body's frame and taken off its F and N (KDL's f_ext convention).
void emit_tip_wrench(Body &body, const Chain &chain, int last) {
  const Transform &tip = chain.exact_tip_offset;
  const std::string F = var("F", last), N = var("N", last);
  body.open("if (tip_wrench) {");
  body.line("T rf[3], rm[3];");
  for (int k = 0; k < 3; ++k) {
    body.line(idx("rf", k) + " = " + linear_or_zero(dot(&tip.R[static_cast<std::size_t>(3 * k)], "tip_wrench")) + ";");
  }
  for (int k = 0; k < 3; ++k) {
    const double *row = &tip.R[static_cast<std::size_t>(3 * k)];
    body.line(idx("rm", k) + " = " +
              linear_or_zero({{row[0], "tip_wrench[3]"}, {row[1], "tip_wrench[4]"}, {row[2], "tip_wrench[5]"}}) + ";");
  }
  for (int k = 0; k < 3; ++k) {
    const std::string moment = linear(cross_cv(tip.t, "rf", k));
    body.line(idx(F, k) + " -= " + idx("rf", k) + "; " + idx(N, k) + " -= " + idx("rm", k) +
              (moment.empty() ? "" : " + (" + moment + ")") + ";");
  }
  body.close();
}

std::string emit_rnea_body(const Chain &chain) {
  Body body(4);
  const int n = static_cast<int>(chain.joints.size());
  body.line("const T gn[3] = {-g[0], -g[1], -g[2]};");
  for (int j = 0; j < n; ++j) emit_forward(body, chain.joints[static_cast<std::size_t>(j)], j);
  for (int j = 0; j < n; ++j) emit_body_force(body, chain.joints[static_cast<std::size_t>(j)], j);
  emit_tip_wrench(body, chain, n - 1);
  for (int j = n - 1; j >= 0; --j) emit_backward(body, chain.joints[static_cast<std::size_t>(j)], j, n);
  return body.str();
}

}  // namespace

std::string emit_rnea_header(const Chain &chain, const std::string &ns, const std::array<double, 3> &gravity) {
  const std::size_t n = chain.joints.size();
  std::ostringstream s;  // the struct; hashed into the inline namespace's name
  open_chain_struct(s, chain, kRneaGeneratorVersion, "as in kiln_fk_chain.cuh");
  const auto list = [&](const std::string &type, const std::string &name, auto &&item) {
    joint_list(s, chain, type, name, item);
  };
  const auto triple = [&](const std::array<double, 3> &v) {
    return "{" + number(v[0]) + ", " + number(v[1]) + ", " + number(v[2]) + "}";
  };
  list("const char *", "kJointNames", [](const ChainJoint &j) { return quoted(j.name); });
  list("int", "kJointTypes", [](const ChainJoint &j) { return std::to_string(static_cast<int>(j.kind)); });
  s << "  // The URDF's limits: position in rad or m (continuous joints have none: kPositionLimited\n";
  s << "  // false, kLower/kUpper -pi/pi as in the FK header), velocity in rad/s or m/s, effort in N m or N\n";
  s << "  // (0 where the URDF gives no <limit>).\n";
  list("bool", "kPositionLimited", [](const ChainJoint &j) { return j.kind == JointKind::continuous ? "false" : "true"; });
  list("double", "kLower", [](const ChainJoint &j) { return number(j.lower); });
  list("double", "kUpper", [](const ChainJoint &j) { return number(j.upper); });
  list("double", "kVelocityLimit", [](const ChainJoint &j) { return number(j.velocity); });
  list("double", "kEffortLimit", [](const ChainJoint &j) { return number(j.effort); });
  s << "  // Unit joint axes in each joint's frame.\n";
  s << "  static constexpr double kAxes[kDof][3] = {";
  for (std::size_t j = 0; j < n; ++j) s << (j ? ", " : "") << triple(chain.joints[j].exact_axis);
  s << "};\n";
  s << "  // Each joint's body (its child link and the links fixed to it along the chain, merged), in the\n";
  s << "  // joint's frame: mass (kg), centre of mass (m), rotational inertia about the centre of mass\n";
  s << "  // (kg m^2: xx, xy, xz, yy, yz, zz).\n";
  list("double", "kMass", [](const ChainJoint &j) { return number(j.body.mass); });
  s << "  static constexpr double kCom[kDof][3] = {";
  for (std::size_t j = 0; j < n; ++j) s << (j ? ", " : "") << triple(chain.joints[j].body.com);
  s << "};\n";
  s << "  static constexpr double kInertia[kDof][6] = {";
  for (std::size_t j = 0; j < n; ++j) {
    const auto &I = chain.joints[j].body.inertia;
    s << (j ? ", " : "") << "{" << number(I[0]) << ", " << number(I[1]) << ", " << number(I[2]) << ", " << number(I[4])
      << ", " << number(I[5]) << ", " << number(I[8]) << "}";
  }
  s << "};\n";
  s << "  // The gravity rnea(q, qd, qdd, tau) uses, in the base frame (m/s^2).\n";
  s << "  static constexpr double kGravity[3] = " << triple(gravity) << ";\n\n";
  s << "  // Joint torques (forces for prismatic joints) tau[kDof] that produce the accelerations qdd at\n";
  s << "  // positions q and velocities qd under gravity g[3] (base frame): M(q) qdd + C(q, qd) qd + G(q).\n";
  s << "  // No friction, damping or rotor inertia; bodies on branches off the chain are not included.\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void rnea(const T *q, const T *qd, const T *qdd, const T *g, T *tau) {\n";
  s << "    rnea_(q, qd, qdd, g, static_cast<const T *>(nullptr), tau);\n";
  s << "  }\n\n";
  s << "  // As above with a wrench the environment applies to the tip link: tip_wrench[6] = force (N),\n";
  s << "  // then moment about the tip origin (N m), both in the tip frame (a payload, a contact).\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void rnea_tip_wrench(const T *q, const T *qd, const T *qdd, const T *g, const T *tip_wrench,\n";
  s << "                                           T *tau) {\n";
  s << "    rnea_(q, qd, qdd, g, tip_wrench, tau);\n";
  s << "  }\n\n";
  s << "  // As above under kGravity.\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void rnea(const T *q, const T *qd, const T *qdd, T *tau) {\n";
  s << "    const T g[3] = {static_cast<T>(kGravity[0]), static_cast<T>(kGravity[1]), static_cast<T>(kGravity[2])};\n";
  s << "    rnea(q, qd, qdd, g, tau);\n";
  s << "  }\n\n";
  s << "  // The torques holding the chain still at q under kGravity: G(q).\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void gravity_torques(const T *q, T *tau) {\n";
  s << "    T zero[kDof] = {};\n";
  s << "    rnea(q, zero, zero, tau);\n";
  s << "  }\n\n";
  s << "  // The joint-space mass matrix M(q) (kDof x kDof, row-major, symmetric), column j as the RNEA of\n";
  s << "  // qdd = e_j without velocity or gravity (kDof RNEA passes).\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void mass_matrix(const T *q, T *M) {\n";
  s << "    const T zero[kDof] = {}, no_gravity[3] = {};\n";
  s << "    T e[kDof] = {}, column[kDof];\n";
  s << "    for (int j = 0; j < kDof; ++j) {\n";
  s << "      e[j] = static_cast<T>(1.0);\n";
  s << "      rnea(q, zero, e, no_gravity, column);\n";
  s << "      e[j] = static_cast<T>(0.0);\n";
  s << "      for (int i = 0; i < kDof; ++i) M[i * kDof + j] = column[i];\n";
  s << "    }\n";
  s << "  }\n\n";
  s << " private:\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void rnea_(const T *q, const T *qd, const T *qdd, const T *g, const T *tip_wrench, T *tau) {\n";
  s << emit_rnea_body(chain);
  s << "  }\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void rot_(const T *R, const T *v, T *o) {  // o = R v\n";
  s << "    o[0] = R[0] * v[0] + R[1] * v[1] + R[2] * v[2];\n";
  s << "    o[1] = R[3] * v[0] + R[4] * v[1] + R[5] * v[2];\n";
  s << "    o[2] = R[6] * v[0] + R[7] * v[1] + R[8] * v[2];\n";
  s << "  }\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void rot_t_(const T *R, const T *v, T *o) {  // o = R^T v\n";
  s << "    o[0] = R[0] * v[0] + R[3] * v[1] + R[6] * v[2];\n";
  s << "    o[1] = R[1] * v[0] + R[4] * v[1] + R[7] * v[2];\n";
  s << "    o[2] = R[2] * v[0] + R[5] * v[1] + R[8] * v[2];\n";
  s << "  }\n";
  s << "  template <class T>\n";
  s << "  static KILN_RNEA_HD void cross_(const T *a, const T *b, T *o) {  // o = a x b\n";
  s << "    o[0] = a[1] * b[2] - a[2] * b[1];\n";
  s << "    o[1] = a[2] * b[0] - a[0] * b[2];\n";
  s << "    o[2] = a[0] * b[1] - a[1] * b[0];\n";
  s << "  }\n";
  for (const char *type : {"float", "double"}) {
    const std::string t = type;
    s << sincos_helper("KILN_RNEA_HD", t, t == "float" ? "sincosf" : "sincos");
  }
  s << "};\n";
  const std::string body = s.str();
  char tag[32];
  std::snprintf(tag, sizeof tag, "rnea_%016llx", static_cast<unsigned long long>(fnv1a(body)));

  std::ostringstream h;
  h << provenance_line(kRneaGeneratorVersion, chain.source, chain.robot, chain.base, chain.tip, n);
  h << "//\n";
  h << "// Inverse dynamics of one serial chain for host and device code (__host__ __device__ under\n";
  h << "// nvcc, plain inline otherwise), templated on the scalar type (float, double), no allocation:\n";
  h << "//   " << ns << "::Chain::rnea(q, qd, qdd, tau)      joint torques tau[kDof] under kGravity\n";
  h << "//   " << ns << "::Chain::rnea(q, qd, qdd, g, tau)   the same under gravity g[3] (base frame)\n";
  h << "//   " << ns << "::Chain::rnea_tip_wrench(q, qd, qdd, g, w, tau)  the same with a wrench w[6] at the tip\n";
  h << "//   " << ns << "::Chain::gravity_torques(q, tau)    the torques holding the chain still\n";
  h << "//   " << ns << "::Chain::mass_matrix(q, M)          M[kDof * kDof], row-major\n";
  h << "// q, qd, qdd hold kDof values (rad, rad/s, rad/s^2 or m, m/s, m/s^2; chain order). Metadata:\n";
  h << "// kDof, kJointNames, kJointTypes, kPositionLimited, kLower, kUpper, kVelocityLimit, kEffortLimit,\n";
  h << "// kAxes, kMass, kCom, kInertia, kGravity, kRobot, kBaseLink, kTipLink, kSource (host code only).\n";
  h << "// One generated dynamics header per translation unit (it may share one with a kiln_fk_chain.cuh).\n";
  h << "//\n";
  h << "// Bodies (each joint's child link plus the links fixed to it along the chain):\n";
  for (std::size_t j = 0; j < n; ++j) {
    const ChainJoint &joint = chain.joints[j];
    h << "//   " << j << " " << comment_safe(joint.name) << " (" << kind_name(joint.kind) << "):";
    for (const std::string &link : joint.body_links) h << " " << comment_safe(link);
    if (!joint.no_inertial.empty()) {
      h << " (no <inertial>:";
      for (const std::string &link : joint.no_inertial) h << " " << comment_safe(link);
      h << ")";
    }
    h << "\n";
  }
  h << "#pragma once\n\n";
  h << "#ifdef KILN_RNEA_CHAIN_TAG\n";
  h << "#error \"kiln_rnea_chain: a translation unit may include only one generated dynamics header\"\n";
  h << "#endif\n";
  h << "#define KILN_RNEA_CHAIN_TAG " << tag << "\n\n";
  h << namespaced_body("KILN_RNEA_HD", ns, tag, body);
  h << model_record(chain);
  return h.str();
}

}  // namespace kiln::robotgen
