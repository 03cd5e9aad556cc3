// kiln_bench_trajopt: the TrajOpt plugin (iiwa14, N = 64) on the GPU against the single-thread CPU
// reference (plugins/trajopt/reference, Eigen, double) on the same 256 pose-goal problems with the
// same stopping rule: time per batch, the ratio, success and limit violations (every answer judged
// in double from its trajectory alone). Prints figures; never fails a build.
//
//   kiln_bench_trajopt [--plugin FILE] [--problems N] [--runs R] [--reference-problems M]
//
// The plugin: FILE, else $KILN_TRAJOPT_PLUGIN_IIWA14, else the one kiln's build made; published into
// a temporary store and loaded through kiln::Runtime. Without a CUDA device the plugin's host path
// runs (on fewer problems) beside the reference.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>

#include <kiln/runtime.hpp>

#include "kiln_fk_chain.cuh"
#include "kiln_rnea_chain.cuh"
#include "kiln_trajopt_batch.hpp"
#include "kiln_trajopt_judge.hpp"
#include "kiln_trajopt_reference.hpp"
#include "bench_store.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Fk = kiln_fk::Chain;
using Dyn = kiln_rnea::Chain;
using Batch = kiln_trajopt_common::HostBatch;
using Reference = kiln_trajopt_ref::Reference<Fk, Dyn, 64>;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Figures {
  uint32_t good = 0, converged = 0;
  double position = 0, orientation = 0, joint = 0, velocity = 0, torque = 0, iterations = 0;
};

template <class Get>
Figures judge(const Batch &b, uint32_t count, Get trajectory) {
  Figures f;
  for (uint32_t i = 0; i < count; ++i) {
    const auto j = kiln_trajopt_common::judge<Fk, Dyn>(b, i, trajectory(i));
    f.good += j.meets() ? 1 : 0;
    f.position = std::max(f.position, j.position_error), f.orientation = std::max(f.orientation, j.orientation_error);
    f.joint = std::max(f.joint, j.position_violation), f.velocity = std::max(f.velocity, j.velocity_violation);
    f.torque = std::max(f.torque, j.torque_violation);
  }
  return f;
}

void print(const char *who, const Figures &f, uint32_t count, double ms) {
  std::printf("%-34s %9.3f ms  success %3u/%u  worst goal %.3g mm %.3g mrad  limit excess pos %.2g vel %.2g tau %.2g  "
              "mean iterations %.1f\n",
              who, ms, f.good, count, 1e3 * f.position, 1e3 * f.orientation, std::max(0.0, f.joint),
              std::max(0.0, f.velocity), std::max(0.0, f.torque), f.iterations);
}

}  // namespace

int main(int argc, char **argv) {
  std::string plugin = std::getenv("KILN_TRAJOPT_PLUGIN_IIWA14") ? std::getenv("KILN_TRAJOPT_PLUGIN_IIWA14") : KILN_BENCH_TRAJOPT_PLUGIN;
  uint32_t problems = 256, runs = 20, reference_problems = 256, seeds = 0;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string key = argv[a], value = argv[a + 1];
    if (key == "--plugin") plugin = value;
    else if (key == "--problems") problems = static_cast<uint32_t>(std::stoul(value));
    else if (key == "--runs") runs = static_cast<uint32_t>(std::stoul(value));
    else if (key == "--reference-problems") reference_problems = static_cast<uint32_t>(std::stoul(value));
    else if (key == "--seeds") seeds = static_cast<uint32_t>(std::stoul(value));
    else {
      std::fprintf(stderr, "usage: kiln_bench_trajopt [--plugin FILE] [--problems N] [--runs R] [--reference-problems M (0: none)] [--seeds S]\n");
      return 2;
    }
  }
  const auto dir = boost::filesystem::temp_directory_path() / boost::filesystem::unique_path("kiln-bench-trajopt-%%%%%%");
  kiln::RuntimeOptions options = kiln::RuntimeOptions::from_environment();
  options.cache_dir = (dir / "cache").string();
  options.log = [](kiln::LogLevel level, const std::string &text) {  // the plugin's activate line: its kernel
    if (level >= kiln::LogLevel::info && text.find("kiln.trajopt") != std::string::npos) std::printf("%s\n", text.c_str());
  };
  kiln::Runtime runtime(options);
  kiln::Module module = kiln_bench::publish_and_load(runtime, "trajopt", plugin);
  kiln::Instance instance = module.create_instance();
  const auto *api = instance.interface<kiln_trajopt_v1>(KILN_TRAJOPT_INTERFACE_ID);
  if (api == nullptr) return 1;
  const kiln::DeviceReport &devices = runtime.devices();
  const bool gpu = kiln_bench::live_gpu(runtime);
  if (!gpu) problems = std::min(problems, 16u), reference_problems = std::min(reference_problems, problems);
  reference_problems = std::min(reference_problems, problems);
  std::printf("kiln_bench_trajopt: %s, iiwa14, N = 64, %u pose goals (start in the middle 60 %% of the ranges, goal "
              "the FK of a joint vector up to 0.5 rad away), dt 0.02 s, %u seeds, tolerances 1 mm / 0.01 rad\n",
              module.report().plugin_id.c_str(), problems, seeds != 0 ? seeds : KILN_TRAJOPT_DEFAULT_SEEDS_PER_TARGET);
  if (gpu) std::printf("device 0: %s, %d SMs\n", devices.devices.front().name.c_str(), devices.devices.front().sm_count);
  instance.activate(gpu ? 0 : -1, problems);
  Batch b(7, 64, problems);
  kiln_trajopt_common::random_problems<Fk, Dyn>(b, 2024, 0.5, 0.02f, kiln_trajopt_common::Goals::pose);
  b.options.seeds_per_target = seeds;
  char message[512] = "";
  std::vector<double> times;
  for (uint32_t run = 0; run < (gpu ? runs + 1 : 1); ++run) {
    const auto start = Clock::now();
    if (api->solve(instance.handle(), &b.problem, &b.result, message, sizeof message) != KILN_OK) {
      std::printf("solve failed: %s\n", message);
      return 1;
    }
    times.push_back(ms_since(start));
  }
  const double first = times.front();
  if (gpu) times.erase(times.begin());
  std::sort(times.begin(), times.end());
  const double plugin_ms = times[times.size() / 2];
  Figures pf = judge(b, problems, [&](uint32_t i) { return b.trajectory(i); });
  for (uint32_t i = 0; i < problems; ++i) pf.iterations += b.iterations[i];
  pf.iterations /= problems;
  if (gpu) std::printf("GPU solve (host buffers, synchronous): first %.3f ms, median of %u %.3f ms, min %.3f ms\n", first,
                       runs, plugin_ms, times.front());

  if (reference_problems == 0) {
    print(gpu ? "plugin, GPU (batch)" : "plugin, host path (batch)", pf, problems, plugin_ms);
    return 0;
  }
  Reference reference;
  kiln_trajopt_ref::Options ro;
  if (seeds != 0) ro.seeds = seeds;
  std::vector<std::vector<float>> answers(reference_problems);
  Figures rf;
  const auto start = Clock::now();
  for (uint32_t i = 0; i < reference_problems; ++i) {
    const auto r = reference.solve(kiln_trajopt_common::reference_problem<Reference>(b, i), i, ro);
    rf.iterations += r.total_iterations;
    answers[i].assign(r.q.size(), 0.0f);
    for (int k = 0; k < r.q.rows(); ++k)
      for (int a = 0; a < r.q.cols(); ++a) answers[i][k * r.q.cols() + a] = static_cast<float>(r.q(k, a));
  }
  const double reference_ms = ms_since(start);
  const Figures judged = judge(b, reference_problems, [&](uint32_t i) { return answers[i].data(); });
  rf.good = judged.good, rf.position = judged.position, rf.orientation = judged.orientation;
  rf.joint = judged.joint, rf.velocity = judged.velocity, rf.torque = judged.torque;
  rf.iterations /= reference_problems;
  const double reference_batch_ms = reference_ms * problems / reference_problems;
  std::printf("\n");
  print(gpu ? "plugin, GPU (batch)" : "plugin, host path (batch)", pf, problems, plugin_ms);
  print("CPU reference, 1 thread", rf, reference_problems, reference_ms);
  std::printf("\nCPU reference per problem %.3f ms (total iterations over its seeds, mean %.1f); for the batch of %u: "
              "%.1f ms\nratio: the plugin is %.1fx the single-thread CPU reference (targets: <= 10 ms for the batch, >= 50x)\n",
              reference_ms / reference_problems, rf.iterations, problems, reference_batch_ms, reference_batch_ms / plugin_ms);
  boost::system::error_code ignored;
  boost::filesystem::remove_all(dir, ignored);
  return 0;
}
