// kiln_bench_mpc: the solves a controller makes every tick, at batch 1. TrajOpt as a
// model-predictive controller runs it: one tracking problem
// per tick, the tip following a figure eight, each tick starting where the last plan's first knot
// led and warm-started from that plan advanced by one knot (KILN_TRAJOPT_SOLVE_WARM_SHIFT), with a
// fixed budget of Levenberg-Marquardt steps. Per budget: the latency of solve() from the call to
// the outputs in host memory (copies included), p50 / p99 / max; the executed knot's tracking
// error judged in double; the ticks whose plan kept every limit. Baseline in the same run: the
// same ticks solved cold (no warm start), so the ratio shows what the warm start buys. Then IK:
// one target per tick along a smooth joint motion (its tip poses by the plugin's own fk), warm
// (the slot's last answer) against cold, at the interface's default tolerances (1 mm, 0.01 rad).
// Prints figures; never fails a build.
//
//   kiln_bench_mpc [--plugin FILE] [--ik-plugin FILE] [--ticks T] [--budgets 1,2,4,8] [--dt S]
//
// The reference (positions only): p(t) = Rz(pi/4) (0.4 sin w t, 0.5, 0.8 + 0.2 sin 2 w t), one
// loop per 6 s, in the iiwa14's base frame. The plant follows each plan's knot 1 exactly.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/runtime.hpp>

#include "kiln_fk_chain.cuh"
#include "kiln_rnea_chain.cuh"
#include "kiln_swap_checks.hpp"
#include "kiln_trajopt_batch.hpp"
#include "kiln_trajopt_judge.hpp"
#include "bench_store.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Fk = kiln_fk::Chain;
using Dyn = kiln_rnea::Chain;
using Batch = kiln_trajopt_common::HostBatch;
constexpr uint32_t kN = 64, kDof = 7;
constexpr double kPi = 3.14159265358979323846;

// The figure eight at time t (s).
void figure_eight(double t, float *pose) {
  const double w = 2 * kPi / 6.0, x = 0.4 * std::sin(w * t), y = 0.5, z = 0.8 + 0.2 * std::sin(2 * w * t);
  const double c = std::cos(kPi / 4), s = std::sin(kPi / 4);
  const float out[7] = {static_cast<float>(c * x - s * y), static_cast<float>(s * x + c * y), static_cast<float>(z), 1, 0, 0, 0};
  std::copy(out, out + 7, pose);
}

void references(Batch &b, uint32_t tick, double dt) {
  for (uint32_t k = 1; k <= kN; ++k) figure_eight((tick + k) * dt, b.track_poses.data() + (k - 1) * 7);
}

struct Run {
  std::vector<double> us;
  double worst_error_mm = 0, sum_error_mm = 0;
  uint32_t within = 0, ticks = 0;
  bool failed = false;
  std::string message;
};

// T ticks from `start` (q, qd) with `budget` steps each; warm: the shifted warm start.
Run run_ticks(const kiln_trajopt_v1 &api, kiln_instance *instance, const std::vector<float> &q_start, uint32_t ticks,
              uint32_t budget, bool warm, double dt) {
  const kiln_trajopt_common::Model &model = kiln_trajopt_common::shared_generated_model<Fk, Dyn>();
  Batch b(kDof, kN, 1);
  b.track_poses.assign(size_t{kN} * 7, 0.0f);
  b.goal_kinds[0] = KILN_TRAJOPT_GOAL_TRACK;
  b.dt[0] = static_cast<float>(dt);
  std::copy(q_start.begin(), q_start.end(), b.q0.begin());
  b.options.seeds_per_target = 1;
  b.options.max_iterations = budget;
  b.point();
  Run run;
  char message[512] = "";
  for (uint32_t tick = 0; tick < ticks; ++tick) {
    references(b, tick, dt);
    b.options.flags = warm && tick > 0 ? KILN_TRAJOPT_SOLVE_WARM_SHIFT : 0;  // tick 0: no plan of this run yet
    const auto start = Clock::now();
    const kiln_status status = api.solve(instance, &b.problem, &b.result, message, sizeof message);
    run.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    if (status != KILN_OK) {
      run.failed = true;
      run.message = message;
      return run;
    }
    const float *plan = b.trajectory(0);
    double q1[kDof], pose[7];
    for (uint32_t j = 0; j < kDof; ++j) q1[j] = plan[kDof + j];
    model.fk(q1, 1, pose);
    const float *want = b.track_poses.data();
    const double error = std::sqrt((pose[0] - want[0]) * (pose[0] - want[0]) + (pose[1] - want[1]) * (pose[1] - want[1]) +
                                   (pose[2] - want[2]) * (pose[2] - want[2]));
    run.worst_error_mm = std::max(run.worst_error_mm, 1e3 * error);
    run.sum_error_mm += 1e3 * error;
    const kiln_trajopt_common::Judged judged = kiln_trajopt_common::judge<Fk, Dyn>(b, 0, plan);
    run.within += judged.velocity_violation <= 0 && judged.torque_violation <= 0 && judged.position_violation <= 0 ? 1 : 0;
    ++run.ticks;
    for (uint32_t j = 0; j < kDof; ++j) {  // the plant follows knot 1
      b.qd0[j] = (plan[kDof + j] - plan[j]) / static_cast<float>(dt);
      b.q0[j] = plan[kDof + j];
    }
  }
  return run;
}

// One row: who, its budget (0: none), the latency, the error named `error`, the ticks counted `good`.
void print(const char *who, uint32_t budget, const Run &r, const char *error = "knot-1 error",
           const char *good = "within limits") {
  const std::string label = budget != 0 ? std::string(who) + ", budget " + std::to_string(budget) : who;
  if (r.failed) {
    std::printf("%-32s FAILED after %u ticks: %s\n", label.c_str(), r.ticks, r.message.c_str());
    return;
  }
  namespace sc = kiln_ik::swap_loop;
  std::printf("%-32s p50 %8.1f us  p99 %8.1f us  max %8.1f us  %s mean %.3f mm worst %.3f mm  %s %u/%u\n",
              label.c_str(), sc::percentile(r.us, 0.5), sc::percentile(r.us, 0.99),
              *std::max_element(r.us.begin(), r.us.end()), error, r.sum_error_mm / r.ticks, r.worst_error_mm, good,
              r.within, r.ticks);
}

// IK: T ticks of one target each; warm: seed 0 from the slot's last answer.
Run run_ik_ticks(const kiln_ik_v1 &api, kiln_instance *instance, uint32_t ticks, bool warm, double dt) {
  const float mid[kDof] = {0.0f, 0.6f, 0.0f, -1.2f, 0.0f, 0.9f, 0.0f};
  kiln_ik_options options{};
  options.struct_size = sizeof options;
  options.flags = warm ? KILN_IK_SOLVE_WARM_START : 0;
  float target[KILN_IK_POSE_SIZE], q[kDof], position_error = 0, orientation_error = 0;
  uint8_t converged = 0;
  kiln_ik_problem problem{};
  problem.struct_size = sizeof problem;
  problem.count = 1;
  problem.memory = KILN_IK_MEMORY_HOST;
  problem.targets = target;
  problem.options = &options;
  kiln_ik_result result{};
  result.struct_size = sizeof result;
  result.q = q, result.position_error = &position_error, result.orientation_error = &orientation_error;
  result.converged = &converged;
  Run run;
  char message[512] = "";
  for (uint32_t tick = 0; tick < ticks; ++tick) {
    float path[kDof];
    for (uint32_t j = 0; j < kDof; ++j)
      path[j] = mid[j] + 0.3f * static_cast<float>(std::sin(2 * kPi / 6.0 * tick * dt + 0.7 * j));
    if (api.fk(instance, path, 1, target) != KILN_OK) {
      run.failed = true;
      run.message = "fk failed";
      return run;
    }
    const auto start = Clock::now();
    const kiln_status status = api.solve(instance, &problem, &result, message, sizeof message);
    run.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    if (status != KILN_OK) {
      run.failed = true;
      run.message = message;
      return run;
    }
    run.worst_error_mm = std::max(run.worst_error_mm, 1e3 * position_error);
    run.sum_error_mm += 1e3 * position_error;
    run.within += converged;
    ++run.ticks;
  }
  return run;
}

std::vector<uint32_t> parse_list(const std::string &text) {
  std::vector<uint32_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(static_cast<uint32_t>(std::stoul(item)));
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  std::string plugin = std::getenv("KILN_TRAJOPT_PLUGIN_IIWA14") ? std::getenv("KILN_TRAJOPT_PLUGIN_IIWA14") : KILN_BENCH_TRAJOPT_PLUGIN;
  std::string ik_plugin = KILN_BENCH_IK_PLUGIN;
  uint32_t ticks = 2000;
  std::vector<uint32_t> budgets = {1, 2, 4, 8};
  double dt = 0.01;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string key = argv[a], value = argv[a + 1];
    if (key == "--plugin") plugin = value;
    else if (key == "--ik-plugin") ik_plugin = value;
    else if (key == "--ticks") ticks = static_cast<uint32_t>(std::stoul(value));
    else if (key == "--budgets") budgets = parse_list(value);
    else if (key == "--dt") dt = std::stod(value);
    else {
      std::fprintf(stderr, "usage: kiln_bench_mpc [--plugin FILE] [--ik-plugin FILE] [--ticks T] [--budgets 1,2,4,8] [--dt S]\n");
      return 2;
    }
  }
  const kiln_bench::BenchStore store("", "kiln-bench-mpc");
  kiln::Runtime runtime(store.options);
  kiln::Module module = kiln_bench::publish_and_load(runtime, "trajopt", plugin);
  kiln::Instance instance = module.create_instance();
  const auto *api = instance.interface<kiln_trajopt_v1>(KILN_TRAJOPT_INTERFACE_ID);
  if (api == nullptr) return 1;
  const kiln::DeviceReport &devices = runtime.devices();
  const bool gpu = kiln_bench::live_gpu(runtime);
  if (!gpu) ticks = std::min(ticks, 20u);
  instance.activate(gpu ? 0 : -1, 1);
  std::printf("kiln_bench_mpc: %s, iiwa14, N = %u, dt %.3f s, batch 1, 1 seed, %u ticks per row, on %s\n",
              module.report().plugin_id.c_str(), kN, dt, ticks,
              gpu ? devices.devices.front().name.c_str() : "the host path (no CUDA device)");

  // Onto the reference's start first (untimed): a cold solve holding the tip at p(0), with the
  // default budget and seeds; its last knot is the first tick's start.
  Batch settle(kDof, kN, 1);
  settle.track_poses.assign(size_t{kN} * 7, 0.0f);
  for (uint32_t k = 0; k < kN; ++k) figure_eight(0.0, settle.track_poses.data() + k * 7);
  settle.goal_kinds[0] = KILN_TRAJOPT_GOAL_TRACK;
  settle.dt[0] = static_cast<float>(dt);
  const float home[kDof] = {0.0f, 0.6f, 0.0f, -1.2f, 0.0f, 0.9f, 0.0f};
  std::copy(home, home + kDof, settle.q0.begin());
  settle.point();
  char message[512] = "";
  if (api->solve(instance.handle(), &settle.problem, &settle.result, message, sizeof message) != KILN_OK) {
    std::printf("the settling solve failed: %s\n", message);
    return 1;
  }
  const std::vector<float> start(settle.trajectory(0) + kN * kDof, settle.trajectory(0) + (kN + 1) * kDof);

  for (uint32_t budget : budgets) {
    // The warm runs record into slot 0; a cold run ignores the slot (no warm flag).
    const Run warm = run_ticks(*api, instance.handle(), start, ticks, budget, true, dt);
    const Run cold = run_ticks(*api, instance.handle(), start, ticks, budget, false, dt);
    print("warm (shifted plan)", budget, warm);
    print("cold (baseline)", budget, cold);
    if (!warm.failed && !cold.failed)
      std::printf("  ratio p99 cold / warm %.2f; knot-1 error mean cold / warm %.2f\n",
                  kiln_ik::swap_loop::percentile(cold.us, 0.99) / kiln_ik::swap_loop::percentile(warm.us, 0.99),
                  cold.sum_error_mm / std::max(warm.sum_error_mm, 1e-9));
  }

  kiln::Module ik_module = kiln_bench::publish_and_load(runtime, "ik", ik_plugin);
  kiln::Instance ik_instance = ik_module.create_instance();
  const auto *ik = ik_instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
  if (ik == nullptr) return 1;
  ik_instance.activate(gpu ? 0 : -1, 1);
  std::printf("\n%s, iiwa14, batch 1 (one target per tick), tolerances 1 mm / 0.01 rad, %u ticks per row\n",
              ik_module.report().plugin_id.c_str(), ticks);
  const Run ik_warm = run_ik_ticks(*ik, ik_instance.handle(), ticks, true, dt);
  const Run ik_cold = run_ik_ticks(*ik, ik_instance.handle(), ticks, false, dt);
  print("IK warm (last answer)", 0, ik_warm, "error", "converged");
  print("IK cold (baseline)", 0, ik_cold, "error", "converged");
  return 0;
}
