// Orocos KDL's KDL::ChainIkSolverPos_LMA on the URDF's chain (read by kdl_parser, not by kiln's
// generator), for the IK bench's peer comparison. KDL's types stay in ik_kdl_lma.cpp, so the bench
// compiles where KDL is missing and prints its KDL rows as skipped.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace kiln_bench_ik {

// nullopt when this build has KDL, else why not.
std::optional<std::string> kdl_unavailable();

// One solver, for one thread (KDL's solvers keep state between calls).
class KdlLma {
 public:
  // The chain base -> tip of `urdf`. LMA stops when |L e| < eps with e = KDL's diff twist
  // (position error; rotation vector, base frame); L = (1, 1, 1, r, r, r) and eps = position
  // tolerance, r = position / orientation tolerance, so that stopping implies both tolerances.
  // Throws std::runtime_error (no KDL, a chain KDL cannot build).
  KdlLma(const std::string &urdf, const std::string &base, const std::string &tip, double position_tolerance,
         double orientation_tolerance, unsigned max_iterations);
  ~KdlLma();
  KdlLma(const KdlLma &) = delete;
  KdlLma &operator=(const KdlLma &) = delete;

  unsigned joints() const;
  // CartToJnt from q_init to the target (position, then quaternion w x y z): KDL's status (0:
  // converged; -1, -2: gradient or increment too small; -3: iterations exhausted), q_out, and
  // the iterations it took.
  int solve(const double *q_init, const double target[7], double *q_out, int &iterations);
  // KDL's forward kinematics (ChainFkSolverPos_recursive): position, rotation row-major.
  void fk(const double *q, double p[3], double R[9]) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln_bench_ik
