// The IK bench's CPU side: the shared targets and the judge every solver's answers go through,
// and the CPU solvers timed on them: kiln's Eigen reference and Orocos KDL's LMA, on one thread
// or on a pool of threads (one solver per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>

#include "bench_thread_pool.hpp"
#include "kiln_fk_chain.cuh"  // <build>/plugins/ik/iiwa14/: the chain the recipe generates too
#include "kiln_ik_reference.hpp"

namespace kiln_bench_ik {

using kiln_bench::for_each_chunk;
using kiln_bench::ThreadPool;
using Chain = kiln_fk::Chain;
using Reference = kiln_ik::reference::Solver<Chain>;
using kiln_ik::reference::Pose;
constexpr int N = Chain::kDof;
constexpr uint32_t kSmall = 1024, kLarge = 8192;

// count targets: the FK (double, rounded to float) of random in-limit joint vectors.
std::vector<float> make_targets(uint32_t count, uint64_t seed);
Pose read_pose(const float *in);
// The judge of every solver: within 1 mm / 0.01 rad of the target by the reference's double FK,
// every joint within its limits.
bool solved(const Pose &target, const Reference::Vector &q);
std::size_t count_good(const std::vector<float> &targets, const std::vector<float> &q, uint32_t count);

enum class CpuSolver { eigen_reference, kdl_lma };
const char *name(CpuSolver solver);

// KDL's failed attempts (a target may have several, one per starting point), by how they ended.
struct KdlAttempts {
  std::size_t outside_limits = 0;  // converged, but outside the joint limits (LMA knows none)
  std::size_t stalled = 0;         // stopped: gradient or step too small
  std::size_t exhausted = 0;       // the iteration cap reached
};

struct CpuTiming {
  CpuSolver solver = CpuSolver::eigen_reference;
  unsigned threads = 1;
  uint32_t targets = 0;  // solved per pass: the first `targets` of the set
  double ms = 0;         // median pass
  std::size_t good = 0;
  bool ok = false;       // false: failure says why (no figures)
  std::string failure;
  double seeds_tried = 0, iterations = 0;  // KDL: means per target
  KdlAttempts failed_attempts;             // KDL: totals
  double per_target_us() const { return targets > 0 ? 1e3 * ms / targets : 0; }
  double success() const { return targets > 0 ? static_cast<double>(good) / targets : 0; }
};

struct CpuSetup {
  std::string urdf;  // KDL reads the chain from it (kdl_parser)
  int passes = 3;
  ThreadPool *pool = nullptr;  // nullptr: one thread, the caller's
};

// `solver` on the first `count` targets, `passes` passes, median; judged outside the timing.
CpuTiming time_cpu(CpuSolver solver, const std::vector<float> &targets, uint32_t count, const CpuSetup &setup);

// KDL's chain against the generated one at random joint vectors: the largest position (m) and
// rotation-entry difference; throws where KDL is missing or its chain does not match in joints.
void compare_kdl_fk(const std::string &urdf, double &position_difference, double &rotation_difference);

}  // namespace kiln_bench_ik
