// kiln IK CPU reference: the algorithm of the GPU solver (../common/kiln_ik_common.hpp), written
// plainly with Eigen in double precision on one thread. Header-only, templated on a generated
// chain (kiln_fk_chain.cuh's Chain, compiled for the host). The tests use it to check the
// chain headers and the algorithm; a benchmark can use it as the CPU baseline.
//
//   #include "kiln_fk_chain.cuh"
//   #include "kiln_ik_reference.hpp"
//   kiln_ik::reference::Solver<kiln_fk::Chain> solver;            // default options
//   auto result = solver.solve(target_pose, target_index);        // or with an initial q
//
// What it shares with the GPU solver: the chain's FK (the same generated code, in double), the
// options and their defaults, the constants of the Levenberg-Marquardt schedule and the
// counter-based starting points, so a seed starts from the same joint vector in both. What it
// does its own way: pose errors through Eigen's quaternions and angle-axis, the linear algebra
// through Eigen (LLT), the limit handling and the seed loop.
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Geometry>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln_ik_common.hpp"

namespace kiln_ik {
namespace reference {

struct Pose {
  Eigen::Vector3d position = Eigen::Vector3d::Zero();
  Eigen::Quaterniond orientation = Eigen::Quaterniond::Identity();
};

// Position error (m) and orientation error (rad, in [0, pi]) between two poses.
inline void pose_errors(const Pose &target, const Pose &current, double &position_error, double &orientation_error) {
  position_error = (target.position - current.position).norm();
  Eigen::Quaterniond delta = target.orientation.normalized() * current.orientation.normalized().conjugate();
  if (delta.w() < 0) delta.coeffs() = -delta.coeffs();
  orientation_error = Eigen::AngleAxisd(delta).angle();
}

template <class Chain>
class Solver {
 public:
  static constexpr int N = Chain::kDof;
  using Vector = Eigen::Matrix<double, N, 1>;
  using Jacobian = Eigen::Matrix<double, 6, N>;
  using Error = Eigen::Matrix<double, 6, 1>;

  struct Result {
    Vector q = Vector::Zero();
    double position_error = 0;
    double orientation_error = 0;
    bool converged = false;
    uint32_t iterations = 0;  // lockstep iterations of the target's seeds
    uint32_t seed = 0;        // the seed the result came from
    uint32_t restarts = 0;    // restarts of that seed
  };

  // Throws std::invalid_argument naming a bad option.
  explicit Solver(const kiln_ik_options *options = nullptr) {
    if (const char *bad = resolve_settings(options, &settings_)) throw std::invalid_argument(bad);
  }

  const Settings &settings() const { return settings_; }

  static Vector lower() {
    Vector v;
    for (int j = 0; j < N; ++j) v[j] = Chain::kLower[j];
    return v;
  }
  static Vector upper() {
    Vector v;
    for (int j = 0; j < N; ++j) v[j] = Chain::kUpper[j];
    return v;
  }
  static bool continuous(int j) { return Chain::kJointTypes[j] == Chain::kContinuous; }
  static bool within_limits(const Vector &q, double tolerance = 0) {
    for (int j = 0; j < N; ++j) {
      if (!(q[j] >= Chain::kLower[j] - tolerance && q[j] <= Chain::kUpper[j] + tolerance)) return false;
    }
    return true;
  }

  static Pose fk(const Vector &q) {
    std::array<double, 3> p{};
    std::array<double, 9> R{};
    Chain::template fk<double>(q.data(), p.data(), R.data());
    return to_pose(p, R);
  }
  static Pose fk(const Vector &q, Jacobian &J) {
    std::array<double, 3> p{};
    std::array<double, 9> R{};
    std::array<double, 6 * N> j{};
    Chain::template fk_jacobian<double>(q.data(), p.data(), R.data(), j.data());
    J = Eigen::Map<const Jacobian>(j.data());  // column-major, like the generated layout
    return to_pose(p, R);
  }

  // Where seed `seed` of target `target_index` starts after `restart` restarts (the algorithm in
  // kiln_ik_common.hpp), projected into the limits: public so that another solver can be started
  // from the same joint vectors.
  Vector starting_point(uint32_t target_index, uint32_t seed, uint32_t restart = 0,
                        const Vector *initial = nullptr) const {
    Vector q;
    if (seed == 0 && restart == 0) {
      if (initial != nullptr) {
        q = *initial;
      } else {
        for (int j = 0; j < N; ++j) q[j] = continuous(j) ? 0.0 : (Chain::kLower[j] + Chain::kUpper[j]) / 2;
      }
    } else {
      for (int j = 0; j < N; ++j) {
        const double u = uniform01(settings_.random_seed, target_index, seed, restart, static_cast<uint32_t>(j));
        q[j] = Chain::kLower[j] + u * (Chain::kUpper[j] - Chain::kLower[j]);
      }
    }
    return project(q);
  }

  // Solve one target. target_index keys the random starting points (use the target's index in
  // its batch to reproduce the GPU solver's seeds); initial: seed 0's start, or nullptr.
  Result solve(const Pose &target, uint32_t target_index, const Vector *initial = nullptr) const {
    Pose goal = target;
    goal.orientation.normalize();
    std::vector<SeedState> seeds(settings_.seeds);
    for (uint32_t k = 0; k < settings_.seeds; ++k) start(seeds[k], goal, target_index, k, 0, initial);
    uint32_t iterations = 0;
    for (uint32_t it = 0; it < settings_.max_iterations; ++it) {
      bool any = false;
      for (const SeedState &s : seeds) any = any || s.converged;
      if (any) break;
      for (uint32_t k = 0; k < settings_.seeds; ++k) iterate(seeds[k], goal, target_index, k);
      iterations = it + 1;
    }
    uint32_t best = 0;
    for (uint32_t k = 1; k < settings_.seeds; ++k) {
      if (better(seeds[k].converged, seeds[k].cost, k, seeds[best].converged, seeds[best].cost, best)) best = k;
    }
    Result result;
    result.q = seeds[best].q;
    result.position_error = seeds[best].position_error;
    result.orientation_error = seeds[best].orientation_error;
    result.converged = seeds[best].converged;
    result.iterations = iterations;
    result.seed = best;
    result.restarts = seeds[best].restart;
    return result;
  }

 private:
  struct SeedState {
    Vector q = Vector::Zero();
    Error e = Error::Zero();
    double cost = 0, position_error = 0, orientation_error = 0, lambda = 0, window_cost = 0;
    uint32_t window = 0, restart = 0;
    bool converged = false;
  };

  static Pose to_pose(const std::array<double, 3> &p, const std::array<double, 9> &R) {
    Pose pose;
    pose.position = Eigen::Vector3d(p[0], p[1], p[2]);
    const Eigen::Matrix3d rotation = Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(R.data());
    pose.orientation = Eigen::Quaterniond(rotation).normalized();
    return pose;
  }

  // e = [dp; rotation vector of R_target R^T], errors and cost at q.
  static void evaluate(const Pose &goal, const Vector &q, Error &e, double &position_error, double &orientation_error,
                       double &cost) {
    const Pose current = fk(q);
    Eigen::Quaterniond delta = goal.orientation * current.orientation.conjugate();
    if (delta.w() < 0) delta.coeffs() = -delta.coeffs();
    const Eigen::AngleAxisd rotation(delta);
    e.head<3>() = goal.position - current.position;
    e.tail<3>() = rotation.axis() * rotation.angle();
    position_error = e.head<3>().norm();
    orientation_error = rotation.angle();
    cost = e.squaredNorm();
  }

  static Vector project(Vector q) {
    for (int j = 0; j < N; ++j) {
      if (continuous(j)) {
        q[j] -= 2 * kPi * std::floor((q[j] + kPi) / (2 * kPi));
      } else {
        q[j] = std::min(std::max(q[j], Chain::kLower[j]), Chain::kUpper[j]);
      }
    }
    return q;
  }

  void start(SeedState &s, const Pose &goal, uint32_t target_index, uint32_t seed, uint32_t restart,
             const Vector *initial) const {
    s.restart = restart;
    s.q = starting_point(target_index, seed, restart, initial);
    evaluate(goal, s.q, s.e, s.position_error, s.orientation_error, s.cost);
    s.lambda = settings_.damping;
    s.window = 0;
    s.window_cost = s.cost;
    s.converged = done(s);
  }

  bool done(const SeedState &s) const {
    return s.position_error < settings_.position_tolerance && s.orientation_error < settings_.orientation_tolerance;
  }

  void iterate(SeedState &s, const Pose &goal, uint32_t target_index, uint32_t seed) const {
    Jacobian J;
    fk(s.q, J);
    bool accepted = false;
    Vector dq = Vector::Zero();
    bool solved = false;
    for (int pass = 0; pass < 2; ++pass) {
      const Eigen::Matrix<double, 6, 6> A = J * J.transpose() + s.lambda * Eigen::Matrix<double, 6, 6>::Identity();
      const Eigen::LLT<Eigen::Matrix<double, 6, 6>> llt(A);
      solved = llt.info() == Eigen::Success;
      if (!solved) break;
      dq = J.transpose() * llt.solve(s.e);
      bool locked = false;
      for (int j = 0; j < N; ++j) {
        if (continuous(j)) continue;
        if ((s.q[j] <= Chain::kLower[j] && dq[j] < 0) || (s.q[j] >= Chain::kUpper[j] && dq[j] > 0)) {
          J.col(j).setZero();
          locked = true;
        }
      }
      if (!locked) break;
    }
    if (solved) {
      const Vector trial = project(s.q + dq);
      Error e;
      double position_error = 0, orientation_error = 0, cost = 0;
      evaluate(goal, trial, e, position_error, orientation_error, cost);
      if (cost < s.cost) {
        accepted = true;
        s.q = trial;
        s.e = e;
        s.cost = cost;
        s.position_error = position_error;
        s.orientation_error = orientation_error;
        s.lambda = std::max(s.lambda * kLambdaDown, static_cast<double>(kLambdaMin));
      }
    }
    if (!accepted) s.lambda *= kLambdaUp;
    s.converged = done(s);
    if (s.converged) return;
    bool stalled = s.lambda > kLambdaMax;
    if (++s.window == kStallWindow) {
      stalled = stalled || s.cost > s.window_cost * (1.0 - kStallRatio);
      s.window = 0;
      s.window_cost = s.cost;
    }
    if (stalled) start(s, goal, target_index, seed, s.restart + 1, nullptr);
  }

  Settings settings_;
};

}  // namespace reference
}  // namespace kiln_ik
