#include "ik_bench_compare.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "ik_kdl_lma.hpp"

namespace kiln_bench_ik {

namespace {

constexpr uint32_t kBatches[2] = {kSmall, kLarge};

const Comparison::CpuRow *find_row(const Comparison &c, CpuSolver solver, bool one_thread) {
  for (const Comparison::CpuRow &row : c.cpu) {
    if (row.at[0].solver == solver && (row.at[0].threads == 1) == one_thread) return &row;
  }
  return nullptr;
}

// A ratio column: how many times faster than `baseline` on one thread, or why there is no ratio.
std::string against(const Comparison &c, CpuSolver baseline, int k, double us_per_target) {
  const Comparison::CpuRow *row = find_row(c, baseline, true);
  if (row == nullptr || !row->at[k].ok) return "- (baseline " + (row ? row->at[k].failure : std::string("absent")) + ")";
  if (!(us_per_target > 0)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1fx", row->at[k].per_target_us() / us_per_target);
  return text;
}

std::string ratios(const Comparison &c, int k, double us_per_target) {
  return against(c, CpuSolver::eigen_reference, k, us_per_target) + " | " +
         against(c, CpuSolver::kdl_lma, k, us_per_target);
}

std::string solved_text(std::size_t good, uint32_t of) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu / %u (%.1f %%)", good, of, 100.0 * static_cast<double>(good) / of);
  return text;
}

}  // namespace

Comparison compare_cpu_solvers(const std::vector<float> &targets, uint32_t cpu_targets, unsigned threads,
                               const std::string &urdf, int passes) {
  Comparison c;
  c.passes = passes;
  if (!kdl_unavailable()) {
    try {
      compare_kdl_fk(urdf, c.fk_position_difference, c.fk_rotation_difference);
      c.fk_compared = true;
    } catch (const std::exception &error) {
      c.fk_failure = error.what();
    }
  }
  std::unique_ptr<ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
  const uint32_t small = std::min(kSmall, cpu_targets), large = std::min(kLarge, cpu_targets);
  std::vector<ThreadPool *> pools = {nullptr};  // nullptr: the calling thread alone
  if (pool) pools.push_back(pool.get());
  for (const CpuSolver solver : {CpuSolver::eigen_reference, CpuSolver::kdl_lma}) {
    for (ThreadPool *p : pools) {
      const CpuSetup setup{urdf, passes, p};
      Comparison::CpuRow row;
      row.at[0] = time_cpu(solver, targets, small, setup);
      row.at[1] = large == small ? row.at[0] : time_cpu(solver, targets, large, setup);
      c.cpu.push_back(row);
    }
  }
  return c;
}

void print_comparison(const Comparison &c) {
  std::printf("\n| solver | threads | targets | solved (1 mm, 0.01 rad, within limits) | ms per batch | us per target | "
              "vs Eigen reference, 1 thread | vs KDL LMA, 1 thread |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int k = 0; k < 2; ++k) {
    const uint32_t count = kBatches[k];
    if (c.gpu.empty()) {
      std::printf("| kiln GPU IK (fp32) | GPU | %u | needs a CUDA device (%s) | - | - | - | - |\n", count, c.gpu_absent.c_str());
    } else {
      const GpuRow &g = c.gpu[static_cast<std::size_t>(k)];
      const double us = 1e3 * g.ms / count;
      std::printf("| kiln GPU IK (fp32) | GPU | %u | %s | %.3f | %.3f | %s |\n", count, solved_text(g.good, count).c_str(),
                  g.ms, us, ratios(c, k, us).c_str());
    }
    for (const Comparison::CpuRow &row : c.cpu) {
      const CpuTiming &t = row.at[k];
      if (!t.ok) {
        std::printf("| %s | %u | %u | %s | - | - | - | - |\n", name(t.solver), t.threads, count, t.failure.c_str());
        continue;
      }
      const std::string batch =
          t.targets < count ? std::to_string(count) + " (the first " + std::to_string(t.targets) + ", scaled)"
                            : std::to_string(count);
      std::printf("| %s | %u | %s | %s | %.1f | %.1f | %s |\n", name(t.solver), t.threads, batch.c_str(),
                  solved_text(t.good, t.targets).c_str(), t.per_target_us() * count / 1e3, t.per_target_us(),
                  ratios(c, k, t.per_target_us()).c_str());
    }
  }
  std::printf("CPU rows: median of %d passes; all-cores rows: one solver per thread, targets handed out 16 at a time\n",
              c.passes);
  if (const Comparison::CpuRow *kdl = find_row(c, CpuSolver::kdl_lma, true); kdl != nullptr && kdl->at[1].ok) {
    const Reference reference;
    const kiln_ik::Settings &s = reference.settings();
    std::printf("KDL LMA: L = (1, 1, 1, %g, %g, %g), eps %g (stops within %g m and %g rad), at most %u iterations "
                "per starting point, kiln's %u starting points in turn until one converges within the limits: "
                "%.2f starting points and %.1f LMA iterations per target (mean, %u targets); failed attempts: "
                "%zu converged outside the limits, %zu stopped (gradient or step too small), %zu ran out of "
                "iterations\n",
                s.position_tolerance / s.orientation_tolerance, s.position_tolerance / s.orientation_tolerance,
                s.position_tolerance / s.orientation_tolerance, s.position_tolerance, s.position_tolerance,
                s.orientation_tolerance, s.max_iterations, s.seeds, kdl->at[1].seeds_tried, kdl->at[1].iterations,
                kdl->at[1].targets, kdl->at[1].failed_attempts.outside_limits, kdl->at[1].failed_attempts.stalled,
                kdl->at[1].failed_attempts.exhausted);
  }
  if (c.fk_compared) {
    std::printf("KDL's chain (kdl_parser) vs the generated FK at 1000 random q: max |dp| %.2e m, max |dR| %.2e\n",
                c.fk_position_difference, c.fk_rotation_difference);
  } else if (!c.fk_failure.empty()) {
    std::printf("KDL's chain vs the generated FK: failed: %s\n", c.fk_failure.c_str());
  }
}

std::string comparison_json(const Comparison &c) {
  std::string out;
  char field[160];
  for (const Comparison::CpuRow &row : c.cpu) {
    const std::string key = std::string(row.at[0].solver == CpuSolver::kdl_lma ? "kdl" : "eigen") +
                            (row.at[0].threads == 1 ? "_1t" : "_" + std::to_string(row.at[0].threads) + "t");
    for (int k = 0; k < 2; ++k) {
      const CpuTiming &t = row.at[k];
      if (t.ok) {
        std::snprintf(field, sizeof field, ",\"%s_us_%u\":%.3f,\"%s_success_%u\":%.4f", key.c_str(), kBatches[k],
                      t.per_target_us(), key.c_str(), kBatches[k], t.success());
      } else {
        std::snprintf(field, sizeof field, ",\"%s_us_%u\":null,\"%s_success_%u\":null", key.c_str(), kBatches[k],
                      key.c_str(), kBatches[k]);
      }
      out += field;
    }
  }
  const Comparison::CpuRow *kdl = find_row(c, CpuSolver::kdl_lma, true);
  out += ",\"kdl\":\"" + (kdl && kdl->at[1].ok ? std::string("ok") : kdl ? kdl->at[1].failure : "absent") + "\"";
  return out;
}

}  // namespace kiln_bench_ik
