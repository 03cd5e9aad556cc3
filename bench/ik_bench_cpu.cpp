#include "ik_bench_cpu.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>

#include "ik_kdl_lma.hpp"

namespace kiln_bench_ik {

namespace {

using Clock = std::chrono::steady_clock;
using Vector = Reference::Vector;
using Solutions = std::vector<Vector, Eigen::aligned_allocator<Vector>>;

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// KDL's LMA knows no joint limits and may return a revolute joint a turn away from its range:
// moved by whole turns into [lower, upper] where that is possible (the same physical pose).
Vector into_limits_by_turns(Vector q) {
  for (int j = 0; j < N; ++j) {
    if (Chain::kJointTypes[j] == Chain::kPrismatic) continue;
    for (int turn = 0; turn < 4 && q[j] > Chain::kUpper[j]; ++turn) q[j] -= 2 * kiln_ik::kPi;
    for (int turn = 0; turn < 4 && q[j] < Chain::kLower[j]; ++turn) q[j] += 2 * kiln_ik::kPi;
  }
  return q;
}

struct KdlOutcome {
  Vector q = Vector::Zero();
  int seeds = 0, iterations = 0;
  KdlAttempts attempts;  // the failed ones
};

// KDL's LMA from kiln's starting points in turn (seed 0, 1, ...; no restarts), each with kiln's
// iteration cap, until one converges within the limits. Otherwise the attempt closest to the
// target (within the limits first), which the judge then fails or passes like any other answer.
KdlOutcome solve_with_kdl(KdlLma &kdl, const Reference &reference, const Pose &target, uint32_t index) {
  const double goal[7] = {target.position.x(),    target.position.y(),    target.position.z(), target.orientation.w(),
                          target.orientation.x(), target.orientation.y(), target.orientation.z()};
  KdlOutcome out;
  bool best_within = false;
  double best_cost = std::numeric_limits<double>::infinity();
  for (uint32_t seed = 0; seed < reference.settings().seeds; ++seed) {
    const Vector start = reference.starting_point(index, seed);
    Vector q;
    int iterations = 0;
    const int status = kdl.solve(start.data(), goal, q.data(), iterations);
    out.iterations += iterations;
    out.seeds = static_cast<int>(seed) + 1;
    q = into_limits_by_turns(q);
    const bool within = Reference::within_limits(q);
    if (status == 0 && within) {
      out.q = q;
      return out;
    }
    ++(status == 0 ? out.attempts.outside_limits : status == -3 ? out.attempts.exhausted : out.attempts.stalled);
    double position_error = 0, orientation_error = 0;
    kiln_ik::reference::pose_errors(target, Reference::fk(q), position_error, orientation_error);
    const double cost = position_error * position_error + orientation_error * orientation_error;
    if ((within && !best_within) || (within == best_within && cost < best_cost)) {
      out.q = q, best_within = within, best_cost = cost;
    }
  }
  return out;
}

}  // namespace

std::vector<float> make_targets(uint32_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> targets(std::size_t{count} * KILN_IK_POSE_SIZE);
  for (uint32_t i = 0; i < count; ++i) {
    Vector q;
    for (int j = 0; j < N; ++j) q[j] = std::uniform_real_distribution<double>(Chain::kLower[j], Chain::kUpper[j])(rng);
    const Pose pose = Reference::fk(q);
    Eigen::Quaterniond o = pose.orientation;
    if (o.w() < 0) o.coeffs() = -o.coeffs();
    const double values[KILN_IK_POSE_SIZE] = {pose.position.x(), pose.position.y(), pose.position.z(), o.w(), o.x(),
                                              o.y(),             o.z()};
    for (int k = 0; k < KILN_IK_POSE_SIZE; ++k) {
      targets[std::size_t{i} * KILN_IK_POSE_SIZE + static_cast<std::size_t>(k)] = static_cast<float>(values[k]);
    }
  }
  return targets;
}

Pose read_pose(const float *in) {
  Pose pose;
  pose.position = Eigen::Vector3d(in[0], in[1], in[2]);
  pose.orientation = Eigen::Quaterniond(in[3], in[4], in[5], in[6]).normalized();
  return pose;
}

bool solved(const Pose &target, const Vector &q) {
  double position_error = 0, orientation_error = 0;
  kiln_ik::reference::pose_errors(target, Reference::fk(q), position_error, orientation_error);
  return Reference::within_limits(q) && position_error < 1e-3 && orientation_error < 1e-2;
}

std::size_t count_good(const std::vector<float> &targets, const std::vector<float> &q, uint32_t count) {
  std::size_t good = 0;
  for (uint32_t i = 0; i < count; ++i) {
    Vector v;
    for (int j = 0; j < N; ++j) v[j] = q[std::size_t{i} * N + static_cast<std::size_t>(j)];
    good += solved(read_pose(targets.data() + std::size_t{i} * KILN_IK_POSE_SIZE), v) ? 1 : 0;
  }
  return good;
}

const char *name(CpuSolver solver) {
  return solver == CpuSolver::kdl_lma ? "KDL ChainIkSolverPos_LMA" : "Eigen reference";
}

CpuTiming time_cpu(CpuSolver solver, const std::vector<float> &targets, uint32_t count, const CpuSetup &setup) {
  CpuTiming timing;
  timing.solver = solver;
  timing.threads = setup.pool != nullptr ? setup.pool->size() : 1;
  timing.targets = count;
  const Reference reference;  // default options, as the GPU solves use; const: shared by the threads
  std::vector<std::unique_ptr<KdlLma>> kdl;  // one per thread
  if (solver == CpuSolver::kdl_lma) {
    if (const auto why = kdl_unavailable()) {
      timing.failure = "skipped: " + *why;
      return timing;
    }
    const kiln_ik::Settings &s = reference.settings();
    try {
      for (unsigned t = 0; t < timing.threads; ++t) {
        kdl.push_back(std::make_unique<KdlLma>(setup.urdf, Chain::kBaseLink, Chain::kTipLink, s.position_tolerance,
                                               s.orientation_tolerance, s.max_iterations));
      }
    } catch (const std::exception &error) {
      timing.failure = std::string("failed: ") + error.what();
      return timing;
    }
  }
  std::vector<Pose> poses(count);
  for (uint32_t i = 0; i < count; ++i) poses[i] = read_pose(targets.data() + std::size_t{i} * KILN_IK_POSE_SIZE);
  Solutions q(count);
  std::vector<double> seeds(timing.threads), iterations(timing.threads);  // per thread: no sharing
  std::vector<KdlAttempts> attempts(timing.threads);

  const auto solve_range = [&](unsigned worker, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const auto index = static_cast<uint32_t>(i);
      if (solver == CpuSolver::eigen_reference) {
        q[i] = reference.solve(poses[i], index).q;
      } else {
        const KdlOutcome out = solve_with_kdl(*kdl[worker], reference, poses[i], index);
        q[i] = out.q, seeds[worker] += out.seeds, iterations[worker] += out.iterations;
        attempts[worker].outside_limits += out.attempts.outside_limits;
        attempts[worker].stalled += out.attempts.stalled;
        attempts[worker].exhausted += out.attempts.exhausted;
      }
    }
  };
  std::vector<double> times;
  for (int pass = 0; pass < setup.passes; ++pass) {
    std::fill(seeds.begin(), seeds.end(), 0.0);
    std::fill(iterations.begin(), iterations.end(), 0.0);
    std::fill(attempts.begin(), attempts.end(), KdlAttempts{});
    const auto start = Clock::now();
    if (setup.pool != nullptr) {
      for_each_chunk(*setup.pool, count, 16, solve_range);
    } else {
      solve_range(0, 0, count);
    }
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  for (uint32_t i = 0; i < count; ++i) timing.good += solved(poses[i], q[i]) ? 1 : 0;  // outside the timing
  for (unsigned t = 0; t < timing.threads; ++t) {
    timing.seeds_tried += seeds[t], timing.iterations += iterations[t];
    timing.failed_attempts.outside_limits += attempts[t].outside_limits;
    timing.failed_attempts.stalled += attempts[t].stalled;
    timing.failed_attempts.exhausted += attempts[t].exhausted;
  }
  timing.seeds_tried /= count, timing.iterations /= count;
  timing.ms = median(times);
  timing.ok = true;
  return timing;
}

void compare_kdl_fk(const std::string &urdf, double &position_difference, double &rotation_difference) {
  const Reference reference;
  const kiln_ik::Settings &s = reference.settings();
  KdlLma kdl(urdf, Chain::kBaseLink, Chain::kTipLink, s.position_tolerance, s.orientation_tolerance, s.max_iterations);
  if (kdl.joints() != static_cast<unsigned>(N)) {
    throw std::runtime_error("KDL's chain has " + std::to_string(kdl.joints()) + " joints, the generated one " +
                             std::to_string(N));
  }
  std::mt19937_64 rng(11);
  position_difference = rotation_difference = 0;
  for (int n = 0; n < 1000; ++n) {
    double q[N], p[3], R[9], kdl_p[3], kdl_R[9];
    for (int j = 0; j < N; ++j) q[j] = std::uniform_real_distribution<double>(Chain::kLower[j], Chain::kUpper[j])(rng);
    Chain::fk<double>(q, p, R);
    kdl.fk(q, kdl_p, kdl_R);
    for (int k = 0; k < 3; ++k) position_difference = std::max(position_difference, std::fabs(p[k] - kdl_p[k]));
    for (int k = 0; k < 9; ++k) rotation_difference = std::max(rotation_difference, std::fabs(R[k] - kdl_R[k]));
  }
}

}  // namespace kiln_bench_ik
