// RNEA bench: the generated inverse dynamics of iiwa14 (kiln_rnea_chain.cuh, plugins/robotgen)
// batched on the GPU, one thread per evaluation, in float and in double, over batches of 1, 4 and
// 16 M random states (CUDA events after warm-up: the kernel alone, and the round trip with the
// transfers from and to pinned host memory), against the same header in double on the CPU in the
// same run (one thread, and all cores with one range of states per thread at a time), and the
// accuracy of both GPU precisions against the CPU double torques of the same states. Prints
// PASS/FAIL against issue 11's target (>= 10 M evaluations/s, fp32 within the tolerance below).
// Without a GPU: "skipped: no CUDA device", the CPU figures, exit 0.
//
//   kiln_bench_rnea [--max-states N] [--cpu-states N] [--runs N] [--threads N]
//     --max-states  the largest batch (default 16777216); the batches are 1 M, 4 M, 16 M up to it
//     --cpu-states  states the CPU baseline evaluates per pass (default 1048576); the accuracy
//                   is checked on these
//     --runs        timed kernel launches per batch (default 20; 3 round trips with transfers)
//     --threads     threads of the all-cores baseline (default: std::thread::hardware_concurrency)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "rnea_bench_cpu.hpp"
#include "rnea_bench_gpu.hpp"

namespace {

using namespace kiln_bench_rnea;

constexpr double kTargetPerSecond = 10e6;
// fp32: the bound tests/robotgen puts on the float instantiation (relative to the state's largest
// torque, at least 1 N m); fp64: the bound of the agreement with KDL.
constexpr double kFloatTolerance = 1e-4, kDoubleTolerance = 1e-9;

int usage() {
  std::fprintf(stderr, "usage: kiln_bench_rnea [--max-states N] [--cpu-states N] [--runs N] [--threads N]\n");
  return 2;
}

std::string ratio(double gpu_per_second, const CpuTiming &cpu) {
  if (!cpu.ok) return "baseline " + cpu.failure;
  char text[32];
  std::snprintf(text, sizeof text, "%.0fx", gpu_per_second / cpu.per_second());
  return text;
}

void print_cpu(const CpuTiming &t) {
  if (t.ok) {
    std::printf("CPU double RNEA, %u thread%s: %.2f M evaluations/s (%zu states, median of 3 passes: %.1f ms)\n",
                t.threads, t.threads == 1 ? "" : "s", t.per_second() / 1e6, t.count, t.ms);
  } else {
    std::printf("CPU double RNEA, %u threads: %s\n", t.threads, t.failure.c_str());
  }
}

const char *verdict(bool pass) { return pass ? "PASS" : "FAIL"; }

}  // namespace

int main(int argc, char **argv) {
  std::size_t max_states = std::size_t{1} << 24, cpu_states = std::size_t{1} << 20;
  int runs = 20;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    const long value = std::atol(argv[++i]);
    if (value < 1) return usage();
    if (arg == "--max-states") {
      max_states = static_cast<std::size_t>(value);
    } else if (arg == "--cpu-states") {
      cpu_states = static_cast<std::size_t>(value);
    } else if (arg == "--runs") {
      runs = static_cast<int>(std::min(value, 10000L));
    } else if (arg == "--threads") {
      threads = static_cast<unsigned>(std::min(value, 4096L));
    } else {
      return usage();
    }
  }
  cpu_states = std::min(cpu_states, max_states);
  std::printf("kiln RNEA bench: %s (%d joints), the generated kiln_rnea_chain.cuh; GPU: one thread per evaluation, "
              "states joint-major; CPU baseline: the same header in double, 1 and %u threads\n",
              robot(), dof(), threads);

  ThreadPool pool(threads);
  const GpuInfo gpu = probe_gpu();
  const std::size_t states_count = gpu.ok ? max_states : cpu_states;
  States<double> exact;
  States<float> single;
  make_states(states_count, 20261202, pool, exact, single);

  std::vector<double> cpu_tau, cpu_tau_threads;
  const CpuTiming cpu1 = time_cpu(exact, cpu_states, 3, nullptr, cpu_tau);
  const CpuTiming cpun = threads > 1 ? time_cpu(exact, cpu_states, 3, &pool, cpu_tau_threads) : cpu1;
  print_cpu(cpu1);
  if (threads > 1) print_cpu(cpun);

  if (!gpu.ok) {
    std::printf("GPU rows: skipped: no CUDA device (%s)\n", gpu.detail.c_str());
    std::printf("{\"bench\":\"rnea\",\"gpu\":false,\"robot\":\"%s\",\"cpu_states\":%zu,\"cpu_1t_per_s\":%.0f,"
                "\"cpu_threads\":%u,\"cpu_nt_per_s\":%.0f}\n",
                robot(), cpu_states, cpu1.per_second(), threads, cpun.per_second());
    return 0;
  }

  std::printf("device %s (sm_%d%d, %d SMs, %.0f GiB)\n", gpu.name.c_str(), gpu.major, gpu.minor, gpu.sm_count,
              gpu.memory_gib);
  std::vector<std::size_t> sizes;
  for (const std::size_t n : {std::size_t{1} << 20, std::size_t{1} << 22, std::size_t{1} << 24}) {
    if (n < max_states) sizes.push_back(n);
  }
  sizes.push_back(max_states);
  std::vector<float> tau32;
  std::vector<double> tau64;
  const std::vector<GpuTiming> fp32 = run_gpu(single, sizes, runs, tau32);
  const std::vector<GpuTiming> fp64 = run_gpu(exact, sizes, runs, tau64);

  std::printf("\n| batch | precision | kernel ms (median of %d, min) | M evaluations/s | with transfers ms | "
              "M evaluations/s with transfers | vs CPU 1 thread | vs CPU %u threads |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
              runs, threads);
  bool gpu_ok = true;
  for (const auto *set : {&fp32, &fp64}) {
    const char *precision = set == &fp32 ? "fp32" : "fp64";
    for (const GpuTiming &t : *set) {
      if (!t.ok) {
        std::printf("| - | %s | failed: %s | | | | | |\n", precision, t.error.c_str());
        gpu_ok = false;
        continue;
      }
      std::printf("| %zu | %s | %.3f (%.3f) | %.0f | %.2f | %.0f | %s | %s |\n", t.count, precision, t.kernel_ms,
                  t.kernel_min_ms, t.per_second() / 1e6, t.transfer_ms, t.per_second_with_transfers() / 1e6,
                  ratio(t.per_second(), cpu1).c_str(), ratio(t.per_second(), cpun).c_str());
    }
  }
  if (!gpu_ok) {
    std::printf("{\"bench\":\"rnea\",\"gpu\":true,\"device\":\"%s\",\"error\":true}\n", gpu.name.c_str());
    return 1;
  }
  std::printf("block %d / %d threads (occupancy API), %d / %d registers per thread (fp32 / fp64); transfers from %s "
              "host memory; ratios: GPU kernel alone against the CPU baseline's rate on its %zu states\n",
              fp32.front().block, fp64.front().block, fp32.front().registers, fp64.front().registers,
              fp32.front().pinned && fp64.front().pinned ? "pinned" : "pageable (cudaHostRegister refused)", cpu_states);

  const Accuracy a32 = compare(tau32, exact.stride, cpu_tau, cpu_states);
  const Accuracy a64 = compare(tau64, exact.stride, cpu_tau, cpu_states);
  const GpuTiming &largest = fp32.back();
  const bool rate_pass = largest.per_second() >= kTargetPerSecond;
  const bool float_pass = a32.finite && a32.worst_relative <= kFloatTolerance;
  const bool double_pass = a64.finite && a64.max_abs <= kDoubleTolerance;
  std::printf("\naccuracy on the CPU baseline's %zu states (largest |tau| %.1f N m):\n", a32.compared, a32.torque_scale);
  std::printf("  fp32 GPU vs CPU double: max |dtau| %.3e N m (%.2e of the largest |tau|); worst per state %.2e of its "
              "largest |tau| (at least 1 N m), tolerance %.0e: %s\n",
              a32.max_abs, a32.max_abs / a32.torque_scale, a32.worst_relative, kFloatTolerance, verdict(float_pass));
  std::printf("  fp64 GPU vs CPU double: max |dtau| %.3e N m, tolerance %.0e N m: %s\n", a64.max_abs, kDoubleTolerance,
              verdict(double_pass));
  std::printf("target >= %.0f M evaluations/s (fp32, kernel alone, batch %zu): %.0f M/s: %s (with transfers %.0f M/s)\n",
              kTargetPerSecond / 1e6, largest.count, largest.per_second() / 1e6, verdict(rate_pass),
              largest.per_second_with_transfers() / 1e6);
  const bool pass = rate_pass && float_pass && double_pass;
  std::printf("overall: %s\n", verdict(pass));
  std::printf("{\"bench\":\"rnea\",\"gpu\":true,\"device\":\"%s\",\"robot\":\"%s\",\"batch\":%zu,\"fp32_per_s\":%.0f,"
              "\"fp32_with_transfers_per_s\":%.0f,\"fp64_per_s\":%.0f,\"fp64_with_transfers_per_s\":%.0f,"
              "\"cpu_1t_per_s\":%.0f,\"cpu_threads\":%u,\"cpu_nt_per_s\":%.0f,\"fp32_max_abs\":%.3e,"
              "\"fp32_worst_relative\":%.3e,\"fp64_max_abs\":%.3e,\"pass\":%s}\n",
              gpu.name.c_str(), robot(), largest.count, largest.per_second(), largest.per_second_with_transfers(),
              fp64.back().per_second(), fp64.back().per_second_with_transfers(), cpu1.per_second(), threads,
              cpun.per_second(), a32.max_abs, a32.worst_relative, a64.max_abs, pass ? "true" : "false");
  return 0;
}
