// IK bench: the iiwa14 IK plugin, built on miss by kiln from its recipe, solving batches of 1024
// and 8192 random reachable targets on the GPU, against the Eigen CPU reference of the same
// algorithm (plugins/ik/reference, double, one thread) on the same targets with the same options
// and starting points, in the same run. Also: device memory the plugin reserves per max batch,
// and the first use in a fresh process (the bench re-executes itself): ensure (a hit) + load +
// activate + first solve, timed inside the child from main() on, and the child's whole wall time.
// Without a GPU it says the GPU figures need a device, times the CPU reference and exits 0.
//
//   kiln_bench_ik [--runs N] [--cpu-targets N] [--children N] [--cache DIR]
//     --runs         timed GPU solves per batch size, after one untimed warm-up (default 50)
//     --cpu-targets  targets the CPU reference solves per pass (default 8192, about 0.5 s); a
//                    batch larger than this is scaled per target, and the output says so
//     --children     fresh processes timed for first use (default 5)
//     --cache        store to build into and load from (default: a temporary one, removed)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/ext/ik.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "kiln_fk_chain.cuh"  // <build>/plugins/ik/iiwa14/: the chain the recipe generates too
#include "kiln_ik_reference.hpp"

namespace {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;
using Chain = kiln_fk::Chain;
using Reference = kiln_ik::reference::Solver<Chain>;
using kiln_ik::reference::Pose;
constexpr int N = Chain::kDof;
constexpr uint32_t kSmall = 1024, kLarge = 8192;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// count targets: the FK (double, rounded to float) of random in-limit joint vectors.
std::vector<float> make_targets(uint32_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> targets(std::size_t{count} * KILN_IK_POSE_SIZE);
  for (uint32_t i = 0; i < count; ++i) {
    Reference::Vector q;
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

// Solutions within 1 mm / 0.01 rad and the limits, by the reference's double FK.
std::size_t count_good(const std::vector<float> &targets, const std::vector<float> &q, uint32_t count) {
  std::size_t good = 0;
  for (uint32_t i = 0; i < count; ++i) {
    Reference::Vector v;
    for (int j = 0; j < N; ++j) v[j] = q[std::size_t{i} * N + static_cast<std::size_t>(j)];
    double pe = 0, oe = 0;
    kiln_ik::reference::pose_errors(read_pose(targets.data() + std::size_t{i} * KILN_IK_POSE_SIZE), Reference::fk(v),
                                    pe, oe);
    good += (Reference::within_limits(v) && pe < 1e-3 && oe < 1e-2) ? 1 : 0;
  }
  return good;
}

struct CpuTiming {
  uint32_t targets = 0;  // solved per pass (the first `targets` of the set)
  double ms = 0;         // median pass
  double small_ms = 0;   // median time of the first kSmall targets within a pass (when targets >= kSmall)
  std::size_t good = 0;
  double per_target_ms() const { return targets > 0 ? ms / targets : 0; }
  // Time for count targets: measured where it was, else scaled per target (and says so).
  double ms_for(uint32_t count) const {
    if (count == targets) return ms;
    if (count == kSmall && targets > kSmall) return small_ms;
    return per_target_ms() * count;
  }
  bool scaled(uint32_t count) const { return count > targets; }
};

// The Eigen reference on the first `count` targets, `passes` passes, median. Judged in double
// (its q is projected into the limits in double; rounding it to float could leave them).
CpuTiming time_cpu(const std::vector<float> &targets, uint32_t count, int passes) {
  const Reference solver;  // default options, as the GPU solves use
  CpuTiming timing;
  timing.targets = count;
  std::vector<double> times, small_times;
  std::vector<Reference::Vector, Eigen::aligned_allocator<Reference::Vector>> solutions(count);
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = Clock::now();
    for (uint32_t i = 0; i < count; ++i) {
      solutions[i] = solver.solve(read_pose(targets.data() + std::size_t{i} * KILN_IK_POSE_SIZE), i).q;
      if (i + 1 == kSmall) small_times.push_back(ms_since(start));
    }
    times.push_back(ms_since(start));
  }
  for (uint32_t i = 0; i < count; ++i) {  // judged outside the timing
    double pe = 0, oe = 0;
    kiln_ik::reference::pose_errors(read_pose(targets.data() + std::size_t{i} * KILN_IK_POSE_SIZE),
                                    Reference::fk(solutions[i]), pe, oe);
    timing.good += (Reference::within_limits(solutions[i]) && pe < 1e-3 && oe < 1e-2) ? 1 : 0;
  }
  timing.ms = median(times);
  timing.small_ms = median(small_times);
  return timing;
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
  std::fprintf(stderr, "usage: kiln_bench_ik [--runs N] [--cpu-targets N] [--children N] [--cache DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  const auto main_start = Clock::now();
  if (argc == 4 && std::strcmp(argv[1], "--first-use-child") == 0) return first_use_child(argv[2], argv[3], main_start);
  int runs = 50, children = 5;
  uint32_t cpu_targets = kLarge;
  std::string cache;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    if (arg == "--runs") {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--cpu-targets") {
      cpu_targets = static_cast<uint32_t>(std::clamp(std::atol(argv[++i]), 1L, static_cast<long>(kLarge)));
    } else if (arg == "--children") {
      children = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--cache") {
      cache = argv[++i];
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
  const std::string recipe_file = KILN_BENCH_IK_RECIPE;

  // The targets, shared by every solver: 8192, the first 1024 of them the small batch.
  const std::vector<float> targets = make_targets(kLarge, 2024);
  const std::vector<float> small(targets.begin(), targets.begin() + std::size_t{kSmall} * KILN_IK_POSE_SIZE);
  const uint32_t cpu_large = std::min(cpu_targets, kLarge);
  const int cpu_passes = 3;

  kiln::Runtime runtime(options_for(cache));
  const kiln::DeviceReport &devices = runtime.devices();
  const bool have_gpu = devices.state == kiln::DriverState::ok && !devices.devices.empty();
  std::printf("kiln IK bench: %s (%d joints), default options (%u seeds, at most %u iterations), CPU reference: "
              "Eigen, double, 1 thread\n",
              Chain::kRobot, N, KILN_IK_DEFAULT_SEEDS_PER_TARGET, KILN_IK_DEFAULT_MAX_ITERATIONS);

  if (!have_gpu) {
    std::printf("no CUDA device (%s): the GPU figures (solve time, speedup, device memory, first use) need a device; "
                "timing the CPU reference only\n",
                devices.detail.c_str());
    const CpuTiming cpu = time_cpu(targets, cpu_large, cpu_passes);
    std::printf("| targets | CPU reference ms (median of %d passes) | per target us |\n| --- | --- | --- |\n",
                cpu_passes);
    for (const uint32_t count : {kSmall, kLarge}) {
      const std::string note = cpu.scaled(count) ? " (scaled per target from " + std::to_string(cpu.targets) + ")" : "";
      std::printf("| %u | %.1f%s | %.1f |\n", count, cpu.ms_for(count), note.c_str(), 1e3 * cpu.ms_for(count) / count);
    }
    std::printf("CPU reference solved %zu / %u targets (1 mm, 0.01 rad, within limits)\n", cpu.good, cpu.targets);
    std::printf("{\"bench\":\"ik\",\"gpu\":false,\"robot\":\"%s\",\"cpu_targets\":%u,\"cpu_ms_1024\":%.3f,"
                "\"cpu_ms_8192\":%.3f,\"cpu_success\":%.4f}\n",
                Chain::kRobot, cpu.targets, cpu.ms_for(kSmall), cpu.ms_for(kLarge),
                static_cast<double>(cpu.good) / cpu.targets);
    if (!temp_root.empty()) {
      boost::system::error_code ignored;
      fs::remove_all(temp_root, ignored);
    }
    return 0;
  }

  int status = 0;
  try {
    const kiln::DeviceIdentity &device = devices.devices.front();
    const kiln::Recipe recipe = kiln::Recipe::load(recipe_file);
    auto start = Clock::now();
    const kiln::BuildResult built = runtime.build(recipe);
    const double build_s = ms_since(start) / 1e3;
    kiln::Module module = runtime.ensure(recipe);
    std::printf("device %s (%s, %d SMs); plugin %s/%s %s for %s: %s in %.1f s\n", device.name.c_str(),
                device.arch_name().c_str(), device.sm_count, recipe.consumer.c_str(), recipe.name.c_str(),
                module.report().plugin_id.c_str(), device.arch_name().c_str(), kiln::to_string(built.outcome), build_s);

    // Device memory per max batch.
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

    // GPU solves: one warm-up, then `runs` timed synchronous solves (host buffers, copies included).
    kiln::Instance instance = module.create_instance();
    const auto *ik = instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
    if (ik == nullptr) throw std::runtime_error("the plugin does not offer kiln.ik/1");
    instance.activate(0, kLarge);
    double gpu_ms[2] = {0, 0}, gpu_min_ms[2] = {0, 0};
    std::size_t gpu_good[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const uint32_t count = k == 0 ? kSmall : kLarge;
      Batch batch(k == 0 ? small : targets, count);
      if (!solve(*ik, instance, batch)) throw std::runtime_error("GPU solve failed");
      std::vector<double> times;
      for (int run = 0; run < runs; ++run) {
        start = Clock::now();
        if (!solve(*ik, instance, batch)) throw std::runtime_error("GPU solve failed");
        times.push_back(ms_since(start));
      }
      gpu_ms[k] = median(times);
      gpu_min_ms[k] = *std::min_element(times.begin(), times.end());
      gpu_good[k] = count_good(batch.targets, batch.q, count);
    }

    // The CPU reference on the same targets.
    const CpuTiming cpu = time_cpu(targets, cpu_large, cpu_passes);

    // First use in fresh processes (the artifact is built: ensure is a hit).
    const FirstUse first = run_children(argv[0], cache, recipe_file, children);

    std::printf("\n| targets | GPU median ms (of %d, min) | GPU us/target | GPU success | CPU reference ms | speedup |\n"
                "| --- | --- | --- | --- | --- | --- |\n",
                runs);
    double speedup[2] = {0, 0}, cpu_ms_of[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const uint32_t count = k == 0 ? kSmall : kLarge;
      const double cpu_ms = cpu.ms_for(count);
      cpu_ms_of[k] = cpu_ms;
      speedup[k] = cpu_ms / gpu_ms[k];
      const std::string cpu_note =
          cpu.scaled(count) ? " (scaled per target from " + std::to_string(cpu.targets) + ")" : "";
      std::printf("| %u | %.3f (%.3f) | %.3f | %zu / %u | %.1f%s | %.0fx |\n", count, gpu_ms[k], gpu_min_ms[k],
                  1e3 * gpu_ms[k] / count, gpu_good[k], count, cpu_ms, cpu_note.c_str(), speedup[k]);
    }
    std::printf("CPU reference: the first %u targets per pass, median of %d passes (the 1024 row: the first 1024 of "
                "each pass), %zu / %u solved\n",
                cpu.targets, cpu_passes, cpu.good, cpu.targets);
    std::printf("device memory reserved by activate: max_batch %u -> %.2f MiB device + %.2f MiB pinned host; "
                "max_batch %u -> %.2f MiB device + %.2f MiB pinned host\n",
                kSmall, static_cast<double>(device_bytes[0]) / (1u << 20), static_cast<double>(host_bytes[0]) / (1u << 20),
                kLarge, static_cast<double>(device_bytes[1]) / (1u << 20), static_cast<double>(host_bytes[1]) / (1u << 20));
    if (first.ok) {
      std::printf("first use in a fresh process (median of %d): %.1f ms from main() = ensure (hit) + load %.1f ms, "
                  "activate(0, %u) %.1f ms, first solve of %u %.1f ms; whole child process %.1f ms wall\n",
                  children, first.total_ms, first.ensure_ms, kSmall, first.activate_ms, kSmall, first.solve_ms,
                  first.wall_ms);
    } else {
      std::printf("first use: the child process failed\n");
      status = 1;
    }
    std::printf("{\"bench\":\"ik\",\"gpu\":true,\"device\":\"%s\",\"robot\":\"%s\",\"gpu_ms_1024\":%.4f,"
                "\"gpu_ms_8192\":%.4f,\"cpu_ms_1024\":%.3f,\"cpu_ms_8192\":%.3f,\"cpu_targets\":%u,\"speedup_1024\":%.1f,"
                "\"speedup_8192\":%.1f,\"success_1024\":%.4f,\"success_8192\":%.4f,\"device_bytes_1024\":%llu,"
                "\"device_bytes_8192\":%llu,\"first_use_ms\":%.2f,\"first_use_wall_ms\":%.2f,\"build_s\":%.2f}\n",
                device.name.c_str(), Chain::kRobot, gpu_ms[0], gpu_ms[1], cpu_ms_of[0], cpu_ms_of[1], cpu.targets,
                speedup[0], speedup[1], static_cast<double>(gpu_good[0]) / kSmall,
                static_cast<double>(gpu_good[1]) / kLarge, static_cast<unsigned long long>(device_bytes[0]),
                static_cast<unsigned long long>(device_bytes[1]), first.total_ms, first.wall_ms, build_s);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "kiln_bench_ik: %s\n", error.what());
    status = 1;
  }
  if (!temp_root.empty()) {
    boost::system::error_code ignored;
    fs::remove_all(temp_root, ignored);
  }
  return status;
}
