// kiln-trajopt-demo: kiln's main job for the TrajOpt plugin. Builds the iiwa14 N=64 plugin of its
// recipe on miss (kiln's CMake backend) into the default store, or loads what an earlier run built,
// or (--plugin FILE) publishes a plugin file built elsewhere (kiln's own build) into a scratch
// store of its own (a temporary directory, removed at exit: the user's cache is never written)
// and loads that;
// then solves a batch of random reachable pose goals on the GPU, or, where no CUDA device exists
// (e.g. KILN_DEVICE=sm_87,integrated=1 declared), on the plugin's host path; and, where the plugin's
// chain is the one the CPU reference was compiled for (iiwa14, N = 64), solves the same problems with
// the single-thread reference (Eigen, double) for the comparison.
//
//   kiln-trajopt-demo [RECIPE] [--plugin FILE] [--problems N] [--host-problems M] [-v]
//
// The model: the plugin's own (kiln.robotmodel/1, abi/kiln/ext/robotmodel.h) where it offers one, so a
// plugin of any robot is judged with its robot; else the iiwa14 headers this demo was compiled with
// (the output says which). Problems are drawn from that model, and every answer is judged from the
// returned trajectory alone (the model's FK and RNEA in double): success = goal within 1 mm and
// 0.01 rad, no position, velocity or torque limit exceeded. Exit status: 0 when at least 99 %
// succeed; 1 otherwise or when a solve fails; kiln's codes for kiln errors.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

#include <kiln/errors.hpp>
#include <kiln/ext/robotmodel.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "kiln_fk_chain.cuh"
#include "kiln_rnea_chain.cuh"
#include "kiln_trajopt_batch.hpp"
#include "kiln_trajopt_judge.hpp"
#include "kiln_trajopt_model.hpp"
#include "kiln_trajopt_reference.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Fk = kiln_fk::Chain;
using Dyn = kiln_rnea::Chain;
using Batch = kiln_trajopt_common::HostBatch;
using Model = kiln_trajopt_common::Model;
using Reference = kiln_trajopt_ref::Reference<Fk, Dyn, KILN_TRAJOPT_N>;
double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

struct Verdict {
  uint32_t good = 0, converged = 0;
  double worst_position = 0, worst_orientation = 0, worst_velocity = 0, worst_torque = 0, worst_joint = 0;
};

Verdict judge_all(const Model &model, const Batch &b, const std::vector<const float *> &trajectories) {
  Verdict v;
  for (uint32_t i = 0; i < b.count; ++i) {
    const auto j = kiln_trajopt_common::judge(model, b, i, trajectories[i]);
    v.good += j.meets() ? 1 : 0;
    v.worst_position = std::max(v.worst_position, j.position_error);
    v.worst_orientation = std::max(v.worst_orientation, j.orientation_error);
    v.worst_joint = std::max(v.worst_joint, j.position_violation);
    v.worst_velocity = std::max(v.worst_velocity, j.velocity_violation);
    v.worst_torque = std::max(v.worst_torque, j.torque_violation);
  }
  return v;
}

void print_verdict(const char *who, const Verdict &v, uint32_t count, double ms) {
  std::printf("%s: success %u / %u (goal within 1 mm / 0.01 rad and every limit, judged in double from the trajectory), "
              "%.3f ms\n",
              who, v.good, count, ms);
  std::printf("  worst goal error %.3g mm / %.3g mrad; worst limit excess: position %.3g rad, velocity %.3g rad/s, "
              "torque %.3g N m (0: none)\n",
              1e3 * v.worst_position, 1e3 * v.worst_orientation, std::max(0.0, v.worst_joint),
              std::max(0.0, v.worst_velocity), std::max(0.0, v.worst_torque));
}

// Whether a and b are one chain: the same joints, limits, and fk and rnea at a few states (to 1e-9).
bool same_chain(const Model &a, const Model &b) {
  if (a.dof != b.dof || a.lower != b.lower || a.upper != b.upper || a.velocity_limit != b.velocity_limit ||
      a.effort_limit != b.effort_limit)
    return false;
  std::vector<double> q(a.dof), qd(a.dof), qdd(a.dof), out_a(a.dof), out_b(a.dof);
  for (int state = 0; state < 4; ++state) {
    for (uint32_t j = 0; j < a.dof; ++j) {
      const double t = std::sin(1.0 + 3 * state + j);  // deterministic, in [-1, 1]
      q[j] = (a.lower[j] + a.upper[j]) / 2 + t * (a.upper[j] - a.lower[j]) / 2;
      qd[j] = t, qdd[j] = 2 * t;
    }
    double pose_a[7], pose_b[7];
    a.fk(q.data(), 1, pose_a);
    b.fk(q.data(), 1, pose_b);
    a.rnea(q.data(), qd.data(), qdd.data(), 1, out_a.data());
    b.rnea(q.data(), qd.data(), qdd.data(), 1, out_b.data());
    for (int k = 0; k < 7; ++k)
      if (std::fabs(pose_a[k] - pose_b[k]) > 1e-9) return false;
    for (uint32_t j = 0; j < a.dof; ++j)
      if (std::fabs(out_a[j] - out_b[j]) > 1e-9) return false;
  }
  return true;
}

// The same problems through the CPU reference, one thread, judged with model; returns its milliseconds.
double run_reference(const Model &model, const Batch &b, Verdict *verdict) {
  Reference reference;
  kiln_trajopt_ref::Options options;
  std::vector<Eigen::MatrixXd> answers(b.count);
  const auto start = Clock::now();
  for (uint32_t i = 0; i < b.count; ++i) {
    const auto r = reference.solve(kiln_trajopt_common::reference_problem<Reference>(b, i), i, options);
    answers[i] = r.q.cast<double>();
  }
  const double ms = ms_since(start);
  std::vector<std::vector<float>> rows(b.count);
  std::vector<const float *> trajectories;
  for (uint32_t i = 0; i < b.count; ++i) {
    for (int k = 0; k < answers[i].rows(); ++k)
      for (int a = 0; a < answers[i].cols(); ++a) rows[i].push_back(static_cast<float>(answers[i](k, a)));
    trajectories.push_back(rows[i].data());
  }
  *verdict = judge_all(model, b, trajectories);
  return ms;
}

// A temporary store for a plugin file given on the command line: publishing it into the
// user's cache would replace whatever entry the user keeps under the demo's names.
class ScratchStore {
 public:
  ScratchStore() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-trajopt-demo-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw kiln::IoError("cannot create a scratch store in " + pattern);
    dir_ = pattern;
  }
  ~ScratchStore() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchStore(const ScratchStore &) = delete;
  ScratchStore &operator=(const ScratchStore &) = delete;
  const std::string &dir() const { return dir_; }

 private:
  std::string dir_;
};

int run(const std::string &recipe_file, const std::string &plugin, uint32_t problems, uint32_t host_problems, bool verbose) {
  kiln::RuntimeOptions options = kiln::RuntimeOptions::from_environment();
  std::optional<ScratchStore> scratch;  // outlives the runtime and the module
  if (!plugin.empty()) {
    scratch.emplace();
    options.cache_dir = scratch->dir();
    options.read_only_stores.clear();  // the file given is what loads, nothing a layer holds
    std::printf("kiln-trajopt-demo: --plugin: a scratch store %s (removed at exit); your cache is not written\n",
                scratch->dir().c_str());
  }
  options.log = [verbose](kiln::LogLevel level, const std::string &text) {
    if (verbose || level >= kiln::LogLevel::warning) std::fprintf(stderr, "kiln: %s: %s\n", kiln::to_string(level), text.c_str());
  };
  kiln::Runtime runtime(options);
  std::optional<kiln::Module> module;
  const auto start = Clock::now();
  if (plugin.empty()) {
    const kiln::Recipe recipe = kiln::Recipe::load(recipe_file);
    std::printf("kiln-trajopt-demo: recipe %s (%s/%s, backend %s)\n", recipe.file.c_str(), recipe.consumer.c_str(),
                recipe.name.c_str(), "cmake");
    module.emplace(runtime.ensure(recipe));  // build on miss, exactly once across processes
    std::printf("ensure: %.3f s\n", ms_since(start) / 1e3);
  } else {
    kiln::PublishRequest request;
    request.consumer = "kiln-trajopt";
    request.name = "iiwa14-N64";
    request.artifact_file = plugin;
    runtime.publish(request);
    module.emplace(runtime.load("kiln-trajopt", "iiwa14-N64"));
    std::printf("kiln-trajopt-demo: published and loaded %s in %.3f s\n", plugin.c_str(), ms_since(start) / 1e3);
  }
  const kiln::LoadReport &report = module->report();
  std::printf("load: %s %s, interfaces:", report.plugin_id.c_str(), report.plugin_version.c_str());
  for (const auto &id : report.interfaces) std::printf(" %s", id.c_str());
  std::printf("\n");
  kiln::Instance instance = module->create_instance();
  const auto *api = instance.interface<kiln_trajopt_v1>(KILN_TRAJOPT_INTERFACE_ID);
  if (api == nullptr) {
    std::printf("the plugin does not offer %s\n", KILN_TRAJOPT_INTERFACE_ID);
    return 5;
  }
  kiln_trajopt_info info{};
  info.struct_size = sizeof info;
  api->info(instance.handle(), &info);
  std::printf("chain: %s (%s), %s -> %s, %u joints, horizon N = %u\n", info.robot, info.source, info.base_link,
              info.tip_link, info.dof, info.horizon);
  // The model the problems are drawn from and the answers judged with: the plugin's own where it has one.
  const Model compiled = kiln_trajopt_common::generated_model<Fk, Dyn>(
      std::string("the model this demo was compiled with (") + Dyn::kRobot + ", " + Dyn::kSource + ")");
  std::optional<Model> own;
  if (const auto *robotmodel = instance.interface<kiln_robotmodel_v1>(KILN_ROBOTMODEL_INTERFACE_ID)) {
    try {
      own = kiln_trajopt_common::plugin_model(robotmodel, instance.handle());
    } catch (const std::exception &error) {
      std::printf("the plugin's model cannot judge its trajectories: %s\n", error.what());
    }
  } else {
    std::printf("the plugin does not offer %s: a plugin of another robot than %s is judged wrongly\n",
                KILN_ROBOTMODEL_INTERFACE_ID, Dyn::kRobot);
  }
  const Model &model = own ? *own : compiled;
  if (!own && info.dof != Dyn::kDof) {
    std::printf("this demo was compiled for %d joints, the plugin has %u, and the plugin offers no model of its own\n",
                Dyn::kDof, info.dof);
    return 1;
  }
  std::printf("judged with: %s\n", model.description.c_str());

  const kiln::DeviceReport &devices = runtime.devices();
  const bool gpu = devices.state == kiln::DriverState::ok && !devices.devices.empty() && !devices.declared;
  const uint32_t count = gpu ? problems : std::min(problems, host_problems);
  if (!gpu && devices.declared) std::printf("declared device %s (KILN_DEVICE), no GPU to run on: the plugin's host path, %u problems\n", options.declared_device.value_or("").c_str(), count);
  else if (!gpu) std::printf("no CUDA device (%s): the plugin's host path, %u problems\n", devices.detail.c_str(), count);
  instance.activate(gpu ? 0 : -1, count);
  Batch b(info.dof, info.horizon, count);
  kiln_trajopt_common::random_problems(model, b, 2024, 0.5, 0.02f, kiln_trajopt_common::Goals::pose);
  char message[512] = "";
  auto solve_start = Clock::now();
  if (api->solve(instance.handle(), &b.problem, &b.result, message, sizeof message) != KILN_OK) {
    std::printf("solve failed: %s\n", message);
    return 1;
  }
  double ms = ms_since(solve_start);
  if (gpu) {  // the first solve warmed caches: report the median of 10 more
    std::vector<double> times;
    for (int run = 0; run < 10; ++run) {
      solve_start = Clock::now();
      if (api->solve(instance.handle(), &b.problem, &b.result, message, sizeof message) != KILN_OK) {
        std::printf("solve failed: %s\n", message);
        return 1;
      }
      times.push_back(ms_since(solve_start));
    }
    std::sort(times.begin(), times.end());
    std::printf("GPU: %u problems, %u seeds each, first solve %.3f ms, median of 10 %.3f ms\n", count,
                KILN_TRAJOPT_DEFAULT_SEEDS_PER_TARGET, ms, times[5]);
    ms = times[5];
  }
  std::vector<const float *> trajectories;
  for (uint32_t i = 0; i < count; ++i) trajectories.push_back(b.trajectory(i));
  const Verdict plugin_verdict = judge_all(model, b, trajectories);
  uint64_t iterations = 0;
  for (uint32_t i = 0; i < count; ++i) iterations += b.iterations[i];
  print_verdict(gpu ? "plugin (GPU)" : "plugin (host path)", plugin_verdict, count, ms);
  std::printf("  reported converged %u, mean iterations %.1f\n", b.converged_count(), static_cast<double>(iterations) / count);
  // The reference is compiled for one chain and horizon: it solves the plugin's problems only where
  // they are its own.
  if (info.horizon == KILN_TRAJOPT_N && (!own || same_chain(model, compiled))) {
    Verdict ref_verdict;
    const double ref_ms = run_reference(model, b, &ref_verdict);
    print_verdict("CPU reference (Eigen, double, 1 thread)", ref_verdict, count, ref_ms);
    std::printf("speed-up of the plugin over the reference: %.1fx\n", ref_ms / ms);
  } else {
    std::printf("CPU reference: not compared; it was compiled for %s with N = %d, the plugin solves for %s with N = %u\n",
                Dyn::kRobot, KILN_TRAJOPT_N, info.robot, info.horizon);
  }
  return plugin_verdict.good >= 0.99 * count ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln-trajopt-demo: build the TrajOpt plugin on miss through kiln, load it, solve and compare"};
  std::string recipe = KILN_TRAJOPT_DEMO_RECIPE, plugin;
  uint32_t problems = 256, host_problems = 16;
  bool verbose = false;
  app.add_option("recipe", recipe, "kiln recipe of the plugin (<build>/plugins/trajopt/recipes/trajopt-iiwa14-N64.json)");
  app.add_option("--plugin", plugin, "publish this plugin file into a scratch store (removed at exit; your cache "
                                     "is not written) and load it instead of ensuring the recipe (e.g. "
                                     KILN_TRAJOPT_DEMO_PLUGIN ")");
  app.add_option("--problems", problems, "problems solved on the GPU (also max_batch)")->check(CLI::Range(1u, 1u << 16));
  app.add_option("--host-problems", host_problems, "problems solved by the host path where no GPU exists")
      ->check(CLI::Range(1u, 1u << 16));
  app.add_flag("-v,--verbose", verbose, "log kiln's info messages to stderr");
  CLI11_PARSE(app, argc, argv);
  try {
    const int status = run(recipe, plugin, problems, host_problems, verbose);
    std::fflush(stdout);
    return status;
  } catch (const kiln::Error &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-trajopt-demo: %s\n", error.what());
    return error.exit_code();
  } catch (const std::exception &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-trajopt-demo: %s\n", error.what());
    return 1;
  }
}
