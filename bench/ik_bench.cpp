// IK bench: the iiwa14 IK plugin, built on miss by kiln from its recipe, solving batches of 1024
// and 8192 random reachable targets on the GPU, side by side with two CPU solvers on the same
// targets, in the same run (ik_bench_cpu.*): the Eigen reference of the same algorithm
// (plugins/ik/reference, double, the same options and starting points) and Orocos KDL's
// ChainIkSolverPos_LMA (ik_kdl_lma.*: the same tolerances, starting points and iteration cap as far
// as LMA allows; bench/README says what differs), each on one thread and on all cores (one solver
// per thread). Every answer is judged alike: 1 mm / 0.01 rad by the reference's double FK, within
// the limits. Also: device memory the plugin reserves per max batch, and the first use in a fresh
// process (the bench re-executes itself): ensure (a hit) + load + activate + first solve, timed
// inside the child from main() on, and the child's whole wall time.
// Without a GPU it says the GPU figures need a device, times the CPU solvers and exits 0; without
// KDL at configure time the KDL rows say "skipped: KDL not found".
//
//   kiln_bench_ik [--runs N] [--cpu-targets N] [--threads N] [--children N] [--cache DIR] [--urdf FILE]
//                 [--recipe FILE]
//     --runs         timed GPU solves per batch size, after one untimed warm-up (default 50)
//     --cpu-targets  targets each CPU solver solves per pass (default 8192); a batch larger than
//                    this is scaled per target, and the output says so
//     --threads      threads of the all-cores CPU rows (default: std::thread::hardware_concurrency)
//     --children     fresh processes timed for first use (default 5)
//     --cache        store to build into and load from (default: a temporary one, removed)
//     --urdf         the URDF KDL reads (default: plugins/ik/robots/iiwa14.urdf of this source tree)
//     --recipe       the plugin's recipe (default: this build tree's plugins/ik/recipes/iiwa14.json;
//                    another machine's copy: scripts/stage-benches)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/ext/ik.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "ik_bench_cpu.hpp"
#include "ik_bench_compare.hpp"
#include "ik_kdl_lma.hpp"

namespace {

using namespace kiln_bench_ik;
namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Batch {
  Batch(const std::vector<float> &t, uint32_t n) : targets(t), q(std::size_t{n} * N) {
    problem.struct_size = sizeof problem;
    problem.count = n;
    problem.memory = KILN_IK_MEMORY_HOST;
    problem.targets = targets.data();
    result.struct_size = sizeof result;
    result.q = q.data();
  }
  Batch(const Batch &) = delete;
  Batch &operator=(const Batch &) = delete;
  std::vector<float> targets, q;
  kiln_ik_problem problem{};
  kiln_ik_result result{};
};

bool solve(const kiln_ik_v1 &ik, kiln::Instance &instance, Batch &batch) {
  char message[512] = "";
  if (ik.solve(instance.handle(), &batch.problem, &batch.result, message, sizeof message) != KILN_OK) {
    std::fprintf(stderr, "solve failed: %s\n", message);
    return false;
  }
  return true;
}

kiln::RuntimeOptions options_for(const std::string &cache) {
  kiln::RuntimeOptions options = kiln::RuntimeOptions::from_environment();
  options.cache_dir = cache;
  return options;
}

// Child mode: a fresh process's first use. Prints one line of milliseconds.
int first_use_child(const std::string &cache, const std::string &recipe_file, Clock::time_point main_start) {
  try {
    kiln::Runtime runtime(options_for(cache));
    auto start = Clock::now();
    kiln::Module module = runtime.ensure(kiln::Recipe::load(recipe_file));
    const double ensure_ms = ms_since(start);
    kiln::Instance instance = module.create_instance();
    const auto *ik = instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
    if (ik == nullptr) return 1;
    start = Clock::now();
    instance.activate(0, kSmall);
    const double activate_ms = ms_since(start);
    Batch batch(make_targets(kSmall, 1), kSmall);
    start = Clock::now();
    if (!solve(*ik, instance, batch)) return 1;
    const double solve_ms = ms_since(start);
    const double total_ms = ms_since(main_start);
    std::printf("%.3f %.3f %.3f %.3f %zu\n", ensure_ms, activate_ms, solve_ms, total_ms,
                count_good(batch.targets, batch.q, kSmall));
    return 0;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "first-use child: %s\n", error.what());
    return 1;
  }
}

struct FirstUse {
  double ensure_ms = 0, activate_ms = 0, solve_ms = 0, total_ms = 0, wall_ms = 0;
  bool ok = false;
};

FirstUse run_children(const char *self, const std::string &cache, const std::string &recipe_file, int children) {
  std::vector<double> ensure, activate, solve_ms, total, wall;
  for (int i = 0; i < children; ++i) {
    const std::string command = std::string("'") + self + "' --first-use-child '" + cache + "' '" + recipe_file + "'";
    const auto start = Clock::now();
    FILE *pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return {};
    double e = 0, a = 0, s = 0, t = 0;
    std::size_t good = 0;
    const int fields = std::fscanf(pipe, "%lf %lf %lf %lf %zu", &e, &a, &s, &t, &good);
    const int status = ::pclose(pipe);
    wall.push_back(ms_since(start));
    if (fields != 5 || status != 0) return {};
    ensure.push_back(e), activate.push_back(a), solve_ms.push_back(s), total.push_back(t);
  }
  FirstUse first;
  first.ensure_ms = median(ensure), first.activate_ms = median(activate), first.solve_ms = median(solve_ms);
  first.total_ms = median(total), first.wall_ms = median(wall), first.ok = true;
  return first;
}

int usage() {
  std::fprintf(stderr, "usage: kiln_bench_ik [--runs N] [--cpu-targets N] [--threads N] [--children N] [--cache DIR] "
                       "[--urdf FILE] [--recipe FILE]\n");
  return 2;
}

struct GpuFigures {
  std::string device_line, memory_line, first_use_line, json;
  std::vector<GpuRow> rows;
  bool ok = false;
};

// The plugin built (or found) by kiln, its device memory per max batch, the timed solves of both
// batches and the first use in fresh processes.
GpuFigures run_gpu(kiln::Runtime &runtime, const kiln::DeviceIdentity &device, const std::string &recipe_file,
                   const std::string &cache, const char *self, const std::vector<float> &targets, int runs,
                   int children) {
  GpuFigures out;
  const kiln::Recipe recipe = kiln::Recipe::load(recipe_file);
  auto start = Clock::now();
  const kiln::BuildResult built = runtime.build(recipe);
  const double build_s = ms_since(start) / 1e3;
  kiln::Module module = runtime.ensure(recipe);
  char line[512];
  std::snprintf(line, sizeof line, "device %s (%s, %d SMs); plugin %s/%s %s for %s: %s in %.1f s", device.name.c_str(),
                device.arch_name().c_str(), device.sm_count, recipe.consumer.c_str(), recipe.name.c_str(),
                module.report().plugin_id.c_str(), device.arch_name().c_str(), kiln::to_string(built.outcome), build_s);
  out.device_line = line;

  uint64_t device_bytes[2] = {0, 0}, host_bytes[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    kiln::Instance probe = module.create_instance();
    const auto *probe_ik = probe.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
    if (probe_ik == nullptr) throw std::runtime_error("the plugin does not offer kiln.ik/1");
    probe.activate(0, k == 0 ? kSmall : kLarge);
    kiln_ik_info info{};
    info.struct_size = sizeof info;
    probe_ik->info(probe.handle(), &info);
    device_bytes[k] = info.device_bytes, host_bytes[k] = info.host_bytes;
  }
  std::snprintf(line, sizeof line,
                "device memory reserved by activate: max_batch %u -> %.2f MiB device + %.2f MiB pinned host; "
                "max_batch %u -> %.2f MiB device + %.2f MiB pinned host",
                kSmall, static_cast<double>(device_bytes[0]) / (1u << 20), static_cast<double>(host_bytes[0]) / (1u << 20),
                kLarge, static_cast<double>(device_bytes[1]) / (1u << 20), static_cast<double>(host_bytes[1]) / (1u << 20));
  out.memory_line = line;

  // GPU solves: one warm-up, then `runs` timed synchronous solves (host buffers, copies included).
  kiln::Instance instance = module.create_instance();
  const auto *ik = instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
  if (ik == nullptr) throw std::runtime_error("the plugin does not offer kiln.ik/1");
  instance.activate(0, kLarge);
  double min_ms[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const uint32_t count = k == 0 ? kSmall : kLarge;
    Batch batch(std::vector<float>(targets.begin(), targets.begin() + std::size_t{count} * KILN_IK_POSE_SIZE), count);
    if (!solve(*ik, instance, batch)) throw std::runtime_error("GPU solve failed");
    std::vector<double> times;
    for (int run = 0; run < runs; ++run) {
      start = Clock::now();
      if (!solve(*ik, instance, batch)) throw std::runtime_error("GPU solve failed");
      times.push_back(ms_since(start));
    }
    min_ms[k] = *std::min_element(times.begin(), times.end());
    out.rows.push_back({count, median(times), count_good(batch.targets, batch.q, count)});
  }

  // First use in fresh processes (the artifact is built: ensure is a hit).
  const FirstUse first = run_children(self, cache, recipe_file, children);
  if (first.ok) {
    std::snprintf(line, sizeof line,
                  "first use in a fresh process (median of %d): %.1f ms from main() = ensure (hit) + load %.1f ms, "
                  "activate(0, %u) %.1f ms, first solve of %u %.1f ms; whole child process %.1f ms wall",
                  children, first.total_ms, first.ensure_ms, kSmall, first.activate_ms, kSmall, first.solve_ms,
                  first.wall_ms);
  } else {
    std::snprintf(line, sizeof line, "first use: the child process failed");
  }
  out.first_use_line = line;
  std::snprintf(line, sizeof line,
                ",\"device\":\"%s\",\"gpu_ms_1024\":%.4f,\"gpu_ms_8192\":%.4f,\"gpu_min_ms_1024\":%.4f,"
                "\"gpu_min_ms_8192\":%.4f,\"success_1024\":%.4f,\"success_8192\":%.4f,\"device_bytes_1024\":%llu,"
                "\"device_bytes_8192\":%llu,\"first_use_ms\":%.2f,\"first_use_wall_ms\":%.2f,\"build_s\":%.2f",
                device.name.c_str(), out.rows[0].ms, out.rows[1].ms, min_ms[0], min_ms[1],
                static_cast<double>(out.rows[0].good) / kSmall, static_cast<double>(out.rows[1].good) / kLarge,
                static_cast<unsigned long long>(device_bytes[0]), static_cast<unsigned long long>(device_bytes[1]),
                first.total_ms, first.wall_ms, build_s);
  out.json = line;
  out.ok = first.ok;
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  const auto main_start = Clock::now();
  if (argc == 4 && std::strcmp(argv[1], "--first-use-child") == 0) return first_use_child(argv[2], argv[3], main_start);
  int runs = 50, children = 5;
  uint32_t cpu_targets = kLarge;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::string cache, urdf = KILN_BENCH_IK_URDF, recipe_file = KILN_BENCH_IK_RECIPE;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    if (arg == "--runs") {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--cpu-targets") {
      cpu_targets = static_cast<uint32_t>(std::clamp(std::atol(argv[++i]), 1L, static_cast<long>(kLarge)));
    } else if (arg == "--threads") {
      threads = static_cast<unsigned>(std::clamp(std::atol(argv[++i]), 1L, 4096L));
    } else if (arg == "--children") {
      children = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--cache") {
      cache = argv[++i];
    } else if (arg == "--urdf") {
      urdf = argv[++i];
    } else if (arg == "--recipe") {
      recipe_file = argv[++i];
    } else {
      return usage();
    }
  }
  std::string temp_root;
  if (cache.empty()) {
    char pattern[] = "/tmp/kiln-bench-ik-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) return 1;
    temp_root = pattern;
    cache = temp_root + "/cache";
  }
  // The targets, shared by every solver: 8192, the first 1024 of them the small batch.
  const std::vector<float> targets = make_targets(kLarge, 2024);
  const int cpu_passes = 3;

  int status = 0;
  kiln::Runtime runtime(options_for(cache));
  const kiln::DeviceReport &devices = runtime.devices();
  const bool have_gpu = devices.state == kiln::DriverState::ok && !devices.devices.empty();
  std::printf("kiln IK bench: %s (%d joints), default options (%u seeds, at most %u iterations, %g m / %g rad); "
              "CPU solvers in double on 1 and %u threads\n",
              Chain::kRobot, N, KILN_IK_DEFAULT_SEEDS_PER_TARGET, KILN_IK_DEFAULT_MAX_ITERATIONS,
              static_cast<double>(KILN_IK_DEFAULT_POSITION_TOLERANCE),
              static_cast<double>(KILN_IK_DEFAULT_ORIENTATION_TOLERANCE), threads);

  GpuFigures gpu;
  if (have_gpu) {
    try {
      gpu = run_gpu(runtime, devices.devices.front(), recipe_file, cache, argv[0], targets, runs, children);
      std::printf("%s\n", gpu.device_line.c_str());
      status = gpu.ok ? 0 : 1;
    } catch (const std::exception &error) {
      std::fprintf(stderr, "kiln_bench_ik: GPU: %s\n", error.what());
      status = 1;
    }
  } else {
    std::printf("no CUDA device (%s): the GPU figures (solve time, device memory, first use) need a device\n",
                devices.detail.c_str());
  }

  Comparison comparison = compare_cpu_solvers(targets, cpu_targets, threads, urdf, cpu_passes);
  comparison.gpu = gpu.rows;
  comparison.gpu_absent = have_gpu ? "the GPU run failed" : "no CUDA device";
  print_comparison(comparison);
  if (!gpu.rows.empty()) {
    std::printf("GPU rows: synchronous solve with host buffers (copies included), median of %d after a warm-up\n%s\n%s\n",
                runs, gpu.memory_line.c_str(), gpu.first_use_line.c_str());
  }
  std::printf("{\"bench\":\"ik\",\"gpu\":%s,\"robot\":\"%s\",\"cpu_targets\":%u,\"cpu_threads\":%u%s%s}\n",
              gpu.rows.empty() ? "false" : "true", Chain::kRobot, std::min(cpu_targets, kLarge), threads,
              gpu.json.c_str(), comparison_json(comparison).c_str());
  if (!temp_root.empty()) {
    boost::system::error_code ignored;
    fs::remove_all(temp_root, ignored);
  }
  return status;
}
