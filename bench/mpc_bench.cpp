// kiln_bench_mpc: the solves a controller makes every tick, at batch 1. TrajOpt as a
// model-predictive controller runs it: one tracking problem
// per tick, the tip following a figure eight, each tick starting where the last plan's first knot
// led and warm-started from that plan advanced by one knot (KILN_TRAJOPT_SOLVE_WARM_SHIFT), with a
// fixed budget of Levenberg-Marquardt steps. Per budget: the latency of solve() from the call to
// the outputs in host memory (copies included), p50 / p99 / max; the executed knot's tracking
// error judged in double; the ticks whose plan kept every limit. Baseline in the same run: the
// same ticks solved cold (no warm start), so the ratio shows what the warm start buys, and the warm
// ticks on a stream of the bench's (enqueued directly, not replayed from the plugin's captured
// graph), so the ratio shows what the graph buys. Then IK:
// one target per tick along a smooth joint motion (its tip poses by the plugin's own fk), warm
// (the slot's last answer) against cold, at the interface's default tolerances (0.1 mm, 0.001 rad).
// Prints figures; never fails a build.
//
//   kiln_bench_mpc [--plugin FILE] [--ik-plugin FILE] [--ticks T] [--budgets 1,2,4,8] [--dt S]
//                  [--batch B] [--start settled|zero|Q1,...,Q7] [--last-knot-weight W] [--no-cold] [--no-ik]
//                  [--json]
//
// The reference (positions only): p(t) = Rz(pi/4) (0.4 sin w t, 0.5, 0.8 + 0.2 sin 2 w t), one
// loop per 6 s, in the robot's base frame (GATO's figure-eight benchmark). The plant follows each
// plan's knot 1 exactly. Any TrajOpt plugin of a 7-joint arm: its horizon, joints and the model it
// is judged with (kiln.robotmodel/1) come from the plugin, so a plugin built from another URDF
// (bench/peers/build_kiln_models.sh) runs the same ticks on its own robot.
//   --batch B      B identical problems per tick (a batched controller's cost; B problems are
//                  solved, the first one is executed)
//   --start        settled (default): first a cold solve onto the reference's start (untimed; its
//                  q is printed); zero: from q = 0 at rest, as GATO's benchmark starts; Q1,...,Q7:
//                  from that q at rest (the same start for a peer: bench/peers/run_kiln.sh)
//   --last-knot-weight W   the last knot's position weight is W times the others' (GATO's cost:
//                  5, its terminal weight 50 against 2 per knot, squared in the least-squares form)
//   --json         also one JSON line per row
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <kiln/ext/ik.h>
#include <kiln/runtime.hpp>

#include <kiln/ext/robotmodel.h>

#include "kiln_swap_checks.hpp"
#include "kiln_trajopt_batch.hpp"
#include "kiln_trajopt_judge.hpp"
#include "bench_store.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Batch = kiln_trajopt_common::HostBatch;
using Model = kiln_trajopt_common::Model;
constexpr uint32_t kDof = 7;
constexpr double kPi = 3.14159265358979323846;

// What every tick of a row shares.
struct Setup {
  const Model *model = nullptr;
  uint32_t horizon = 0, batch = 1;
  double dt = 0.01;
  float last_knot_weight = 1;  // the last knot's position weight over the others'
  std::string start = "settled";  // settled, zero or given (a q of the command line)
};

// The interface's default position weight of a tracking knot: goal_weight's default 1000 / 10, per m
// (kiln/ext/trajopt.h, track_weights).
constexpr float kDefaultTrackWeight = 100.0f;

// The figure eight at time t (s).
void figure_eight(double t, float *pose) {
  const double w = 2 * kPi / 6.0, x = 0.4 * std::sin(w * t), y = 0.5, z = 0.8 + 0.2 * std::sin(2 * w * t);
  const double c = std::cos(kPi / 4), s = std::sin(kPi / 4);
  const float out[7] = {static_cast<float>(c * x - s * y), static_cast<float>(s * x + c * y), static_cast<float>(z), 1, 0, 0, 0};
  std::copy(out, out + 7, pose);
}

// How far (mm) the tip at joint vector q (kDof floats) is from the position of pose `want`, by the
// model's FK in double.
double tip_distance_mm(const Model &model, const float *q, const float *want) {
  double joints[kDof], pose[7];
  for (uint32_t j = 0; j < kDof; ++j) joints[j] = q[j];
  model.fk(joints, 1, pose);
  return 1e3 * std::sqrt((pose[0] - want[0]) * (pose[0] - want[0]) + (pose[1] - want[1]) * (pose[1] - want[1]) +
                         (pose[2] - want[2]) * (pose[2] - want[2]));
}

// How far (mm) the tip at q is from the figure eight's start.
double tip_error_mm(const Model &model, const std::vector<float> &q) {
  float want[7];
  figure_eight(0.0, want);
  return tip_distance_mm(model, q.data(), want);
}

// Every problem of b tracks the figure eight from tick + 1 on.
void references(Batch &b, uint32_t tick, double dt) {
  const uint32_t N = b.horizon;
  for (uint32_t k = 1; k <= N; ++k) figure_eight((tick + k) * dt, b.track_poses.data() + (k - 1) * 7);
  for (uint32_t i = 1; i < b.count; ++i)
    std::copy(b.track_poses.begin(), b.track_poses.begin() + size_t{N} * 7, b.track_poses.begin() + size_t{i} * N * 7);
}

// A batch of `setup.batch` tracking problems; weights: the interface's default per knot, the last
// knot's scaled (none when the scale is 1: the interface's own default).
Batch tracking_batch(const Setup &setup) {
  const uint32_t N = setup.horizon;
  Batch b(kDof, N, setup.batch);
  b.track_poses.assign(size_t{setup.batch} * N * 7, 0.0f);
  if (setup.last_knot_weight != 1) {
    b.track_weights.assign(size_t{setup.batch} * N * 2, 0.0f);
    for (uint32_t i = 0; i < setup.batch; ++i)
      for (uint32_t k = 0; k < N; ++k)
        b.track_weights[(size_t{i} * N + k) * 2] = (k + 1 == N ? setup.last_knot_weight : 1.0f) * kDefaultTrackWeight;
  }
  std::fill(b.goal_kinds.begin(), b.goal_kinds.end(), uint8_t{KILN_TRAJOPT_GOAL_TRACK});
  std::fill(b.dt.begin(), b.dt.end(), static_cast<float>(setup.dt));
  b.point();
  return b;
}

struct Run {
  std::vector<double> us;
  std::vector<double> errors_mm;  // one per tick
  uint32_t within = 0, ticks = 0;
  // The executed step (knot 0 -> 1) against the model's limits: velocity (q_1 - q_0) / dt, knot 0's torque.
  uint32_t executed_over_velocity = 0, executed_over_torque = 0;
  bool failed = false;
  std::string message;
  double mean_error_mm() const {
    double sum = 0;
    for (double e : errors_mm) sum += e;
    return errors_mm.empty() ? 0 : sum / static_cast<double>(errors_mm.size());
  }
  double worst_error_mm() const { return errors_mm.empty() ? 0 : *std::max_element(errors_mm.begin(), errors_mm.end()); }
};

// T ticks from `start` (q, qd) with `budget` steps each; warm: the shifted warm start.
Run run_ticks(const kiln_trajopt_v1 &api, kiln_instance *instance, const Setup &setup, const std::vector<float> &q_start,
              uint32_t ticks, uint32_t budget, bool warm, void *stream = nullptr) {
  const Model &model = *setup.model;
  const uint32_t D = kDof;
  const double dt = setup.dt;
  Batch b = tracking_batch(setup);
  for (uint32_t i = 0; i < b.count; ++i) std::copy(q_start.begin(), q_start.end(), b.q0.begin() + size_t{i} * D);
  b.options.seeds_per_target = 1;
  b.options.max_iterations = budget;
  b.point();
  b.problem.stream = stream;
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
    run.errors_mm.push_back(tip_distance_mm(model, plan + D, b.track_poses.data()));  // knot 1 against its reference
    const kiln_trajopt_common::Judged judged = kiln_trajopt_common::judge(model, b, 0, plan);
    run.within += judged.velocity_violation <= 0 && judged.torque_violation <= 0 && judged.position_violation <= 0 ? 1 : 0;
    bool over_velocity = false, over_torque = false;
    for (uint32_t j = 0; j < D; ++j) {
      const double velocity = (plan[D + j] - plan[j]) / dt, torque = b.torques[j];
      over_velocity |= model.velocity_limit[j] > 0 && std::abs(velocity) > model.velocity_limit[j] * (1 + 1e-4);
      over_torque |= model.effort_limit[j] > 0 && std::abs(torque) > model.effort_limit[j] * (1 + 1e-4);
    }
    run.executed_over_velocity += over_velocity, run.executed_over_torque += over_torque;
    ++run.ticks;
    for (uint32_t i = 0; i < b.count; ++i) {  // the plant follows knot 1 (every problem is the same one)
      for (uint32_t j = 0; j < D; ++j) {
        b.qd0[i * D + j] = (plan[D + j] - plan[j]) / static_cast<float>(dt);
        b.q0[i * D + j] = plan[D + j];
      }
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
              *std::max_element(r.us.begin(), r.us.end()), error, r.mean_error_mm(), r.worst_error_mm(), good,
              r.within, r.ticks);
}

// The same row as one JSON line (--json), with what the peers' rows report (bench/peers).
void print_json(const char *who, const std::string &plugin_id, const Setup &setup, uint32_t budget, const Run &r,
                const std::string &device) {
  namespace sc = kiln_ik::swap_loop;
  if (r.failed) {
    std::printf("{\"solver\":\"kiln\",\"row\":\"%s\",\"failed\":true}\n", who);
    return;
  }
  std::printf("{\"solver\":\"kiln\",\"row\":\"%s\",\"plugin\":\"%s\",\"device\":\"%s\",\"batch\":%u,\"N\":%u,"
              "\"dt\":%g,\"start\":\"%s\",\"budget\":%u,\"last_knot_weight\":%g,\"ticks\":%u,\"solve_us_median\":%.3f,"
              "\"solve_us_p95\":%.3f,\"solve_us_p99\":%.3f,\"solve_us_max\":%.3f,\"track_err_mm_median\":%.4f,"
              "\"track_err_mm_mean\":%.4f,\"track_err_mm_max\":%.4f,\"plans_within_limits\":%u,"
              "\"executed_over_velocity\":%u,\"executed_over_torque\":%u}\n",
              who, plugin_id.c_str(), device.c_str(), setup.batch, setup.horizon, setup.dt, setup.start.c_str(), budget,
              setup.last_knot_weight, r.ticks, sc::percentile(r.us, 0.5), sc::percentile(r.us, 0.95),
              sc::percentile(r.us, 0.99), *std::max_element(r.us.begin(), r.us.end()), sc::percentile(r.errors_mm, 0.5),
              r.mean_error_mm(), r.worst_error_mm(), r.within, r.executed_over_velocity, r.executed_over_torque);
}

// IK: T ticks of one target each; warm: seed 0 from the slot's last answer.
Run run_ik_ticks(const kiln_ik_v1 &api, kiln_instance *instance, uint32_t ticks, bool warm, double dt,
                 void *stream = nullptr) {
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
  problem.stream = stream;
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
    run.errors_mm.push_back(1e3 * position_error);
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
  std::string ik_plugin = KILN_BENCH_IK_PLUGIN, start_mode = "settled";
  uint32_t ticks = 2000;
  std::vector<uint32_t> budgets = {1, 2, 4, 8};
  Setup setup;
  bool cold = true, ik = true, json = false;
  const char *usage = "usage: kiln_bench_mpc [--plugin FILE] [--ik-plugin FILE] [--ticks T] [--budgets 1,2,4,8] [--dt S]\n"
                      "                      [--batch B] [--start settled|zero|Q1,...,Q7] [--last-knot-weight W] [--no-cold] [--no-ik] [--json]\n";
  for (int a = 1; a < argc; ++a) {
    const std::string key = argv[a];
    if (key == "--no-cold") cold = false;
    else if (key == "--no-ik") ik = false;
    else if (key == "--json") json = true;
    else if (a + 1 < argc) {
      const std::string value = argv[++a];
      if (key == "--plugin") plugin = value;
      else if (key == "--ik-plugin") ik_plugin = value;
      else if (key == "--ticks") ticks = static_cast<uint32_t>(std::stoul(value));
      else if (key == "--budgets") budgets = parse_list(value);
      else if (key == "--dt") setup.dt = std::stod(value);
      else if (key == "--batch") setup.batch = std::max(1u, static_cast<uint32_t>(std::stoul(value)));
      else if (key == "--start") start_mode = value;
      else if (key == "--last-knot-weight") setup.last_knot_weight = std::stof(value);
      else {
        std::fprintf(stderr, "%s", usage);
        return 2;
      }
    } else {
      std::fprintf(stderr, "%s", usage);
      return 2;
    }
  }
  const kiln_bench::BenchStore store("", "kiln-bench-mpc");
  kiln::Runtime runtime(store.options);
  kiln::Module module = kiln_bench::publish_and_load(runtime, "trajopt", plugin);
  kiln::Instance instance = module.create_instance();
  const auto *api = instance.interface<kiln_trajopt_v1>(KILN_TRAJOPT_INTERFACE_ID);
  const auto *robotmodel = instance.interface<kiln_robotmodel_v1>(KILN_ROBOTMODEL_INTERFACE_ID);
  if (api == nullptr || robotmodel == nullptr) {
    std::printf("%s offers no kiln.trajopt/1 or no kiln.robotmodel/1\n", plugin.c_str());
    return 1;
  }
  const Model model = kiln_trajopt_common::plugin_model(robotmodel, instance.handle());
  if (model.dof != kDof) {
    std::printf("%s solves a chain of %u joints; kiln_bench_mpc runs 7-joint arms\n", plugin.c_str(), model.dof);
    return 1;
  }
  setup.model = &model;
  const kiln::DeviceReport &devices = runtime.devices();
  const bool gpu = kiln_bench::live_gpu(runtime);
  if (!gpu) ticks = std::min(ticks, 20u);
  instance.activate(gpu ? 0 : -1, setup.batch);
  kiln_trajopt_info info{};
  info.struct_size = sizeof info;
  api->info(instance.handle(), &info);
  setup.horizon = info.horizon;
  const std::string device = gpu ? devices.devices.front().name : "host";
  // A stream of this process on the same device: solves given it are enqueued directly, the baseline
  // of the graphs a plugin replays on its own stream (kiln_solver_instance.hpp).
  void *direct_stream = nullptr;
  if (gpu && !json) {
    cudaStream_t stream = nullptr;
    cudaError_t error = cudaSetDevice(0);
    if (error == cudaSuccess) error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (error == cudaSuccess)
      direct_stream = stream;
    else
      std::printf("the baseline without graphs FAILED: no stream of this process (%s: %s)\n", cudaGetErrorName(error),
                  cudaGetErrorString(error));
  }
  std::printf("kiln_bench_mpc: %s, %s, N = %u, dt %.3f s, batch %u, 1 seed, %u ticks per row, start %s, on %s\n",
              module.report().plugin_id.c_str(), model.robot.c_str(), setup.horizon, setup.dt, setup.batch, ticks,
              start_mode.c_str(), gpu ? device.c_str() : "the host path (no CUDA device)");

  setup.start = start_mode == "settled" || start_mode == "zero" ? start_mode : "given";
  std::vector<float> start(kDof, 0.0f);
  if (start_mode != "settled" && start_mode != "zero") {
    std::vector<float> q;
    std::stringstream in(start_mode);
    for (std::string item; std::getline(in, item, ',');) q.push_back(std::strtof(item.c_str(), nullptr));
    if (q.size() != kDof) {
      std::fprintf(stderr, "--start %s: give settled, zero or %u joint positions separated by commas\n", start_mode.c_str(), kDof);
      return 2;
    }
    start = q;
  } else if (start_mode == "settled") {
    // Onto the reference's start first (untimed): cold solves holding the tip at p(0), with the
    // default budget and seeds, each from the last one's final knot at rest (a solve's horizon
    // may be too short to get there within the limits), until the tip is within 0.1 mm of it.
    Setup one = setup;
    one.batch = 1;
    Batch settle = tracking_batch(one);
    for (uint32_t k = 0; k < setup.horizon; ++k) figure_eight(0.0, settle.track_poses.data() + k * 7);
    start = {0.0f, 0.6f, 0.0f, -1.2f, 0.0f, 0.9f, 0.0f};
    for (int round = 0; round < 20 && tip_error_mm(model, start) > 0.1; ++round) {
      std::copy(start.begin(), start.end(), settle.q0.begin());
      settle.point();
      char message[512] = "";
      if (api->solve(instance.handle(), &settle.problem, &settle.result, message, sizeof message) != KILN_OK) {
        std::printf("the settling solve failed: %s\n", message);
        return 1;
      }
      start.assign(settle.trajectory(0) + setup.horizon * kDof, settle.trajectory(0) + (setup.horizon + 1) * kDof);
    }
  }
  std::printf("start q");
  for (float q : start) std::printf(" %.5f", q);
  std::printf(" (rad), at rest; its tip %.1f mm from the reference's start\n", tip_error_mm(model, start));

  for (uint32_t budget : budgets) {
    // The warm runs record into slot 0; a cold run ignores the slot (no warm flag).
    const Run warm = run_ticks(*api, instance.handle(), setup, start, ticks, budget, true);
    print("warm (shifted plan)", budget, warm);
    if (json) print_json("trajopt-track-warm", module.report().plugin_id, setup, budget, warm, device);
    if (direct_stream != nullptr) {
      // The same warm ticks enqueued directly, not replayed from a captured graph.
      const Run direct = run_ticks(*api, instance.handle(), setup, start, ticks, budget, true, direct_stream);
      print("warm, no graph (baseline)", budget, direct);
      if (json) print_json("trajopt-track-warm-direct", module.report().plugin_id, setup, budget, direct, device);
      if (!warm.failed && !direct.failed)
        std::printf("  ratio p50 no graph / graph %.2f, p99 %.2f\n",
                    kiln_ik::swap_loop::percentile(direct.us, 0.5) / kiln_ik::swap_loop::percentile(warm.us, 0.5),
                    kiln_ik::swap_loop::percentile(direct.us, 0.99) / kiln_ik::swap_loop::percentile(warm.us, 0.99));
    }
    if (!cold) continue;
    const Run baseline = run_ticks(*api, instance.handle(), setup, start, ticks, budget, false);
    print("cold (baseline)", budget, baseline);
    if (json) print_json("trajopt-track-cold", module.report().plugin_id, setup, budget, baseline, device);
    if (!warm.failed && !baseline.failed)
      std::printf("  ratio p99 cold / warm %.2f; knot-1 error mean cold / warm %.2f\n",
                  kiln_ik::swap_loop::percentile(baseline.us, 0.99) / kiln_ik::swap_loop::percentile(warm.us, 0.99),
                  baseline.mean_error_mm() / std::max(warm.mean_error_mm(), 1e-9));
  }
  if (!ik) return 0;

  kiln::Module ik_module = kiln_bench::publish_and_load(runtime, "ik", ik_plugin);
  kiln::Instance ik_instance = ik_module.create_instance();
  const auto *ik_api = ik_instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
  if (ik_api == nullptr) return 1;
  ik_instance.activate(gpu ? 0 : -1, 1);
  std::printf("\n%s, iiwa14, batch 1 (one target per tick), tolerances 0.1 mm / 0.001 rad (the defaults), %u ticks per row\n",
              ik_module.report().plugin_id.c_str(), ticks);
  const Run ik_warm = run_ik_ticks(*ik_api, ik_instance.handle(), ticks, true, setup.dt);
  const Run ik_cold = run_ik_ticks(*ik_api, ik_instance.handle(), ticks, false, setup.dt);
  print("IK warm (last answer)", 0, ik_warm, "error", "converged");
  print("IK cold (baseline)", 0, ik_cold, "error", "converged");
  if (direct_stream != nullptr) {
    const Run ik_direct = run_ik_ticks(*ik_api, ik_instance.handle(), ticks, true, setup.dt, direct_stream);
    print("IK warm, no graph (baseline)", 0, ik_direct, "error", "converged");
    if (!ik_warm.failed && !ik_direct.failed)
      std::printf("  ratio p50 no graph / graph %.2f, p99 %.2f\n",
                  kiln_ik::swap_loop::percentile(ik_direct.us, 0.5) / kiln_ik::swap_loop::percentile(ik_warm.us, 0.5),
                  kiln_ik::swap_loop::percentile(ik_direct.us, 0.99) / kiln_ik::swap_loop::percentile(ik_warm.us, 0.99));
  }
  return 0;
}
