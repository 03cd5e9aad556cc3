// kiln TrajOpt: the CPU reference, a single-thread double-precision solver of the same problems with
// the same formulation and stopping rule as the plugin (abi/kiln/ext/trajopt.h, plugins/trajopt/README.md
// "CPU reference"), written independently with Eigen:
//   - residuals and costs as the plugin's (the same weights, margins and penalties, in double);
//   - torque Jacobians: forward differences (1e-6) of the generated RNEA in double, the mass matrix
//     from RNEA columns; the goal Jacobian from the generated FK;
//   - per knot a 21x21 local Gauss-Newton block (Eigen fixed-size), scattered into a sparse matrix
//     of the block-banded pattern, factored by Eigen's SimplicialLDLT (natural ordering: the band is
//     kept, the symbolic analysis done once per solver);
//   - Levenberg-Marquardt with the plugin's damping schedule; seeds one after another until one
//     converged (a sequential solver's natural strategy), the same starting trajectories.
// Templated on the generated chains (kiln_fk::Chain, kiln_rnea::Chain) and the horizon.
#pragma once

#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <cmath>
#include <cstdint>
#include <vector>

namespace kiln_trajopt_ref {

// The plugin's constants (plugins/trajopt/solver/trajopt_params.hpp, kiln/ext/trajopt.h).
constexpr double kLimitMargin = 0.95, kLimitWeight = 30.0, kTerminalShare = 0.1, kInset = 1e-4;
constexpr double kPlateau = 1e-2, kInitialDamping = 1e-3, kFdStep = 1e-6;

struct Options {
  uint32_t max_iterations = 60;
  uint32_t seeds = 4;
  double position_tolerance = 1e-3, orientation_tolerance = 1e-2;
  double goal_weight = 1000, smoothness_weight = 0.05, effort_weight = 0.5;
  uint64_t random_seed = 0;
};

template <class Fk, class Dyn, int N>
class Reference {
 public:
  static constexpr int D = Dyn::kDof, V = N * D;
  using Vec = Eigen::Matrix<double, D, 1>;
  using Mat = Eigen::Matrix<double, D, D>;
  using Local = Eigen::Matrix<double, 3 * D, 3 * D>;

  struct Problem {
    Vec q0 = Vec::Zero(), qd0 = Vec::Zero();
    bool joint_goal = false;
    Eigen::Vector3d p = Eigen::Vector3d::Zero();
    Eigen::Matrix3d R = Eigen::Matrix3d::Identity();
    Vec goal_q = Vec::Zero();
    double dt = 0.02;
  };
  struct Result {
    Eigen::MatrixXd q;  // (N + 1) x D
    bool converged = false;
    double position_error = 0, orientation_error = 0, velocity_violation = 0, torque_violation = 0, cost = 0;
    uint32_t iterations = 0;        // of the returned seed
    uint32_t total_iterations = 0;  // over the seeds run
  };

  Reference() {
    // The block-banded upper pattern, analysed once.
    std::vector<Eigen::Triplet<double>> t;
    for (int b = 0; b < N; ++b)
      for (int c = b; c < N && c <= b + 2; ++c)
        for (int i = 0; i < D; ++i)
          for (int j = 0; j < D; ++j)
            if (b * D + i <= c * D + j) t.emplace_back(b * D + i, c * D + j, 1.0);
    H_.resize(V, V);
    H_.setFromTriplets(t.begin(), t.end());
    H_.makeCompressed();
    ldlt_.analyzePattern(H_);
    for (int j = 0; j < D; ++j) {
      lower_[j] = Dyn::kPositionLimited[j] ? Dyn::kLower[j] + kInset : -1e300;
      upper_[j] = Dyn::kPositionLimited[j] ? Dyn::kUpper[j] - kInset : 1e300;
    }
  }

  Result solve(const Problem &pr, uint32_t index, const Options &o) {
    Result best;
    bool have = false;
    for (uint32_t seed = 0; seed < o.seeds; ++seed) {
      Result r = solve_seed(pr, index, seed, o);
      const uint32_t total = best.total_iterations + r.iterations;
      if (!have || (r.converged && !best.converged) || (r.converged == best.converged && r.cost < best.cost)) best = r;
      best.total_iterations = total;
      have = true;
      if (r.converged) break;
    }
    return best;
  }

 private:
  struct Eval {
    double cost = 0, pe = 0, oe = 0, vel = 0, tau = 0;
    bool finite = true;
    std::vector<Vec> taus, wt, ut, wv, uv, ra;
    Eigen::Matrix<double, 7, D> Jg;
    Eigen::Matrix<double, 7, 1> rg;
  };

  Vec knot(const Eigen::VectorXd &x, const Problem &pr, int k) const {
    if (k < 0) return pr.q0 - pr.dt * pr.qd0;
    if (k == 0) return pr.q0;
    return x.segment<D>((k - 1) * D);
  }
  void state(const Eigen::VectorXd &x, const Problem &pr, int k, Vec &q, Vec &qd, Vec &qdd) const {
    const Vec prev = knot(x, pr, k - 1), here = knot(x, pr, k), next = k < N ? knot(x, pr, k + 1) : here;
    q = here;
    qd = k == 0 ? pr.qd0 : Vec((here - prev) / pr.dt);
    qdd = k < N ? Vec((next - 2 * here + prev) / (pr.dt * pr.dt)) : Vec::Zero();
  }
  static Vec rnea(const Vec &q, const Vec &qd, const Vec &qdd) {
    Vec tau;
    Dyn::rnea(q.data(), qd.data(), qdd.data(), tau.data());
    return tau;
  }
  static double hinge(double value, double limit, double &w, double &u) {
    if (limit <= 0) return 0;
    const double s = 1 / (kLimitMargin * limit), v = value * s;
    if (std::fabs(v) <= 1) return 0;
    const double r = kLimitWeight * (v > 0 ? v - 1 : v + 1), d = kLimitWeight * s;
    w += d * d, u += d * r;
    return 0.5 * r * r;
  }
  static Eigen::Vector3d log_map(const Eigen::Matrix3d &E) {
    const Eigen::AngleAxisd aa(E);
    return aa.angle() * aa.axis();
  }

  double goal(const Vec &qN, const Problem &pr, double w, Eval &e) const {
    e.Jg.setZero();
    e.rg.setZero();
    if (pr.joint_goal) {
      const Vec d = qN - pr.goal_q;
      e.rg.template head<D>() = w * d;
      e.Jg.template topRows<D>() = w * Mat::Identity();
      e.pe = d.cwiseAbs().maxCoeff();
      e.oe = 0;
    } else {
      double p[3], R[9], J[6 * D];
      Fk::fk_jacobian(qN.data(), p, R, J);
      const Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>> Rm(R);
      const Eigen::Map<const Eigen::Matrix<double, 6, D>> Jm(J);
      const Eigen::Vector3d dp = Eigen::Vector3d(p[0], p[1], p[2]) - pr.p;
      const Eigen::Vector3d rv = log_map(Rm * pr.R.transpose());
      e.rg.template head<3>() = w * dp;
      e.rg.template segment<3>(3) = w * rv;
      e.Jg.template topRows<6>() = w * Jm;
      e.pe = dp.norm();
      e.oe = rv.norm();
    }
    return 0.5 * e.rg.squaredNorm();
  }

  Eval evaluate(const Eigen::VectorXd &x, const Problem &pr, const Options &o) const {
    Eval e;
    e.taus.resize(N + 1), e.wt.resize(N + 1), e.ut.resize(N + 1), e.wv.resize(N + 1), e.uv.resize(N + 1), e.ra.resize(N + 1);
    const double root = std::sqrt(pr.dt), terminal = o.goal_weight * kTerminalShare;
    for (int k = 0; k <= N; ++k) {
      Vec q, qd, qdd;
      state(x, pr, k, q, qd, qdd);
      const Vec tau = rnea(q, qd, qdd);
      e.taus[k] = tau;
      const double ca = k < N ? o.smoothness_weight * root : 0.0, ct = k == N ? terminal : 0.0;
      for (int j = 0; j < D; ++j) {
        const double ce = Dyn::kEffortLimit[j] > 0 ? o.effort_weight * root / Dyn::kEffortLimit[j] : 0.0;
        double wt = ce * ce, ut = ce * ce * tau[j], wv = 0, uv = 0;
        e.cost += 0.5 * ce * ce * tau[j] * tau[j] + hinge(tau[j], Dyn::kEffortLimit[j], wt, ut);
        if (k > 0) {
          e.cost += hinge(qd[j], Dyn::kVelocityLimit[j], wv, uv) + 0.5 * ct * ct * qd[j] * qd[j];
          wv += ct * ct, uv += ct * ct * qd[j];
          if (Dyn::kVelocityLimit[j] > 0) e.vel = std::fmax(e.vel, std::fabs(qd[j]) - Dyn::kVelocityLimit[j]);
        }
        if (Dyn::kEffortLimit[j] > 0) e.tau = std::fmax(e.tau, std::fabs(tau[j]) - Dyn::kEffortLimit[j]);
        e.wt[k][j] = wt, e.ut[k][j] = ut, e.wv[k][j] = wv, e.uv[k][j] = uv, e.ra[k][j] = ca * qdd[j];
      }
      e.cost += 0.5 * e.ra[k].squaredNorm();
      if (k == N) e.cost += goal(q, pr, o.goal_weight, e);
    }
    e.finite = std::isfinite(e.cost);
    if (!e.finite) e.cost = INFINITY;
    return e;
  }

  // H (the pattern's values) and g from the linearisation at x.
  void assemble(const Eigen::VectorXd &x, const Problem &pr, const Options &o, const Eval &e, Eigen::VectorXd &g) {
    for (int i = 0; i < H_.nonZeros(); ++i) H_.valuePtr()[i] = 0;
    g.setZero(V);
    const double dt = pr.dt, ca = o.smoothness_weight * std::sqrt(dt) / (dt * dt);
    for (int k = 0; k <= N; ++k) {
      Vec q, qd, qdd;
      state(x, pr, k, q, qd, qdd);
      Mat Tq, Tv, M;
      for (int c = 0; c < D; ++c) {
        Vec a = q, b = qd, e_c = Vec::Zero();
        a[c] += kFdStep, b[c] += kFdStep, e_c[c] = 1;
        Tq.col(c) = (rnea(a, qd, qdd) - e.taus[k]) / kFdStep;
        Tv.col(c) = (rnea(q, b, qdd) - e.taus[k]) / kFdStep;
        double tau[D], zero[D] = {}, g0[3] = {0, 0, 0};
        Dyn::rnea(q.data(), zero, e_c.data(), g0, tau);
        M.col(c) = Eigen::Map<Vec>(tau);
      }
      Eigen::Matrix<double, D, 3 * D> Dt;
      const double m = k < N ? 1.0 / (dt * dt) : 0.0;
      Dt.template block<D, D>(0, 0) = -Tv / dt + m * M;
      Dt.template block<D, D>(0, D) = Tq + Tv / dt - 2 * m * M;
      Dt.template block<D, D>(0, 2 * D) = m * M;
      const double alpha[3] = {k < N ? ca : 0, k < N ? -2 * ca : 0, k < N ? ca : 0};
      const double beta[3] = {k > 0 ? -1 / dt : 0, k > 0 ? 1 / dt : 0, 0};
      Local G = Dt.transpose() * e.wt[k].asDiagonal() * Dt;
      Eigen::Matrix<double, 3 * D, 1> gl = Dt.transpose() * e.ut[k];
      for (int s = 0; s < 3; ++s) {
        gl.template segment<D>(s * D) += alpha[s] * e.ra[k] + beta[s] * e.uv[k];
        for (int t = 0; t < 3; ++t)
          G.template block<D, D>(s * D, t * D).diagonal() +=
              Vec::Constant(alpha[s] * alpha[t]) + beta[s] * beta[t] * e.wv[k];
      }
      if (k == N) {
        G.template block<D, D>(D, D) += e.Jg.transpose() * e.Jg;
        gl.template segment<D>(D) += e.Jg.transpose() * e.rg;
      }
      for (int s = 0; s < 3; ++s) {
        const int bs = k + s - 2;
        if (bs < 0 || bs >= N) continue;
        g.segment<D>(bs * D) += gl.template segment<D>(s * D);
        for (int t = s; t < 3; ++t) {
          const int bt = k + t - 2;
          if (bt < 0 || bt >= N) continue;
          for (int j = 0; j < D; ++j)
            for (int i = 0; i < D; ++i)
              if (bs * D + i <= bt * D + j) H_.coeffRef(bs * D + i, bt * D + j) += G(s * D + i, t * D + j);
        }
      }
    }
  }

  double uniform(uint64_t key, uint32_t problem, uint32_t seed, uint32_t joint) const {
    uint64_t z = key ^ (uint64_t{problem} * 0x9e3779b97f4a7c15ull) ^ (uint64_t{seed} << 40) ^ (uint64_t{joint} << 20);
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 40) / 16777216.0;
  }
  Vec project(Vec q) const {
    for (int j = 0; j < D; ++j) q[j] = std::fmin(std::fmax(q[j], lower_[j]), upper_[j]);
    return q;
  }

  // The plugin's IK seeding of a pose goal: damped least squares with a weak pull towards `start`.
  Vec pose_goal_end(const Problem &pr, const Vec &start) const {
    constexpr double kPull = 1e-3;
    Eval e;
    Vec q = project(start);
    const auto cost_at = [&](const Vec &at) { return goal(at, pr, 1.0, e) + 0.5 * kPull * (at - start).squaredNorm(); };
    double cost = cost_at(q), lambda = 1e-2;
    for (int it = 0; it < 40 && (e.pe > 1e-4 || e.oe > 1e-3); ++it) {
      const Eigen::Matrix<double, 7, D> J = e.Jg;
      const Eigen::Matrix<double, 7, 1> r = e.rg;
      const Mat A = J.transpose() * J + (kPull + lambda) * Mat::Identity();
      const Vec step = A.ldlt().solve(-(J.transpose() * r + kPull * (q - start)));
      const Vec trial = project(q + step);
      const double t = cost_at(trial);
      if (std::isfinite(t) && t < cost) q = trial, cost = t, lambda = std::fmax(lambda * 0.3, 1e-6);
      else lambda *= 4;
      cost = cost_at(q);
    }
    return q;
  }

  Eigen::VectorXd start(const Problem &pr, uint32_t index, uint32_t seed, const Options &o) const {
    Vec from = pr.joint_goal ? pr.goal_q : pr.q0;
    if (seed > 0)
      for (int j = 0; j < D; ++j) from[j] += (pr.joint_goal ? 0.8 : 2.0) * (uniform(o.random_seed, index, seed, j) - 0.5);
    const Vec end = pr.joint_goal ? project(from) : pose_goal_end(pr, from);
    Eigen::VectorXd x(V);
    for (int k = 1; k <= N; ++k) {
      const double t = static_cast<double>(k) / N, blend = t * t * t * (10 + t * (-15 + 6 * t));
      x.segment<D>((k - 1) * D) = project(pr.q0 + (end - pr.q0) * blend + pr.qd0 * pr.dt * k * (1 - t) * (1 - t));
    }
    return x;
  }

  Result solve_seed(const Problem &pr, uint32_t index, uint32_t seed, const Options &o) {
    Eigen::VectorXd x = start(pr, index, seed, o), g(V), trial(V);
    Eval e = evaluate(x, pr, o);
    Result r;
    double lambda = kInitialDamping;
    bool linearized = false;
    for (uint32_t it = 0; e.finite && it < o.max_iterations; ++it) {
      if (!linearized) assemble(x, pr, o, e, g), linearized = true;
      Eigen::SparseMatrix<double> A = H_;
      for (int i = 0; i < V; ++i) A.coeffRef(i, i) = A.coeff(i, i) * (1 + lambda) + 1e-9;
      ++r.iterations;
      ldlt_.factorize(A.selfadjointView<Eigen::Upper>());
      if (ldlt_.info() != Eigen::Success || (ldlt_.vectorD().array() <= 0).any()) {
        lambda *= 10;
        if (lambda > 1e10) break;
        continue;
      }
      const Eigen::VectorXd step = ldlt_.solve(-g);
      for (int i = 0; i < V; ++i) trial[i] = std::fmin(std::fmax(x[i] + step[i], lower_[i % D]), upper_[i % D]);
      Eval t = evaluate(trial, pr, o);
      double decrease = 0;
      if (t.finite && t.cost < e.cost) {
        decrease = (e.cost - t.cost) / e.cost;
        x = trial, e = std::move(t), linearized = false, lambda = std::fmax(lambda / 3, 1e-7);
      } else {
        lambda *= 5;
      }
      if (e.finite && e.pe <= o.position_tolerance && e.oe <= o.orientation_tolerance && e.vel <= 0 && e.tau <= 0 &&
          decrease < kPlateau) {
        r.converged = true;
        break;
      }
      if (lambda > 1e10) break;
    }
    r.q.resize(N + 1, D);
    for (int k = 0; k <= N; ++k) r.q.row(k) = knot(x, pr, k).transpose();
    r.position_error = e.pe, r.orientation_error = e.oe, r.velocity_violation = e.vel, r.torque_violation = e.tau;
    r.cost = e.cost;
    return r;
  }

  Eigen::SparseMatrix<double> H_;
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>, Eigen::Upper, Eigen::NaturalOrdering<int>> ldlt_;
  double lower_[D], upper_[D];
};

}  // namespace kiln_trajopt_ref
