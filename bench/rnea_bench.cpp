// RNEA bench: the generated inverse dynamics of iiwa14 (kiln_rnea_chain.cuh, plugins/robotgen)
// batched on the GPU, one thread per evaluation, in float and in double, over batches of 1, 4 and
// 16 M random states (CUDA events after warm-up: the kernel alone, and the round trip with the
// transfers from and to pinned host memory), against the same header in double on the CPU in the
// same run (one thread, and all cores with one range of states per thread at a time), and the
// accuracy of both GPU precisions against the CPU double torques of the same states. Prints
// PASS/FAIL against the goal (>= 10 M evaluations/s, fp32 within the tolerance below).
// Without a GPU: "skipped: no CUDA device", the CPU figures, exit 0.
//
//   kiln_bench_rnea [--max-states N] [--cpu-states N] [--runs N] [--threads N]
//   kiln_bench_rnea --kdl FILE [--cpu-only]
//     --max-states  the largest batch (default 16777216); the batches are 1 M, 4 M, 16 M up to it
//     --batches     instead: these batch sizes, comma-separated (e.g. 1000,10000,100000,1000000: the
//                   sizes bench/peers runs GRiD at)
//     --cpu-states  states the CPU baseline evaluates per pass (default 1048576); the accuracy
//                   is checked on these
//     --runs        timed kernel launches per batch (default 20; 3 round trips with transfers)
//     --threads     threads of the all-cores baseline (default: std::thread::hardware_concurrency)
//     --kdl         instead of the timing: the generated chain named by FILE (a KDL states file,
//                   rnea_kdl_file.hpp; iiwa14 or Panda) on its states against Orocos KDL's torques
//                   in it: the host-compiled header in double and float, then the GPU (the timed
//                   kernel) in fp32 and fp64. Exit 0 all within tolerance, 1 one is not, 2 usage or
//                   the file refused (another URDF, chain or gravity than this binary's), 3 no GPU
//     --cpu-only    with --kdl: the host rows alone, no GPU needed (exit 0 or 1)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rnea_bench_cpu.hpp"
#include "rnea_bench_gpu.hpp"
#include "rnea_bench_kdl.hpp"
#include "rnea_kdl_file.hpp"

namespace {

using namespace kiln_bench_rnea;

constexpr double kTargetPerSecond = 10e6;
// fp32: the bound tests/robotgen puts on the float instantiation (relative to the state's largest
// torque, at least 1 N m); fp64: the bound of the agreement with KDL.
constexpr double kFloatTolerance = 1e-4, kDoubleTolerance = 1e-9;

int usage() {
  std::fprintf(stderr,
               "usage: kiln_bench_rnea [--max-states N | --batches N,N,...] [--cpu-states N] [--runs N] [--threads N]\n"
               "       kiln_bench_rnea --kdl FILE [--cpu-only]   (bench/README.md: the KDL states files)\n");
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

// --kdl: how far an evaluation is from KDL's torques. The double tolerance is the one
// tests/robotgen holds the generated header to against KDL, per torque relative to max(|tau|, 1);
// fp32 is held to the timed bench's bound (tests/robotgen's float one): relative to the state's
// largest torque (at least 1 N m), since float rounding of a joint's torque follows the size of
// the wrench it is projected from, not of the torque (a base joint's small torque under a large
// gravity moment). Both measures are printed for every row.
constexpr double kKdlDoubleTolerance = 1e-9, kKdlFloatTolerance = 1e-4;

struct KdlAgreement {
  double max_abs = 0;        // N m or N
  double max_relative = 0;   // max |dtau_j| / max(|tau_kdl_j|, 1)
  double max_per_state = 0;  // max |dtau_j| / max(1, the state's largest |tau_kdl|)
  std::size_t worst_state = 0;
  int worst_joint = 0;
  bool finite = true;
};

// value(i, j): the evaluation's torque j of state i; kdl: state-major.
template <class Value>
KdlAgreement kdl_agreement(const std::vector<double> &kdl, std::size_t n, int dof, Value value) {
  KdlAgreement a;
  for (std::size_t i = 0; i < n; ++i) {
    double largest = 1.0;
    for (int j = 0; j < dof; ++j) largest = std::max(largest, std::fabs(kdl[i * static_cast<std::size_t>(dof) + j]));
    for (int j = 0; j < dof; ++j) {
      const double reference = kdl[i * static_cast<std::size_t>(dof) + j];
      const double difference = std::fabs(value(i, j) - reference);
      if (!std::isfinite(difference)) {
        a.finite = false;
        continue;
      }
      const double relative = difference / std::max(1.0, std::fabs(reference));
      if (relative > a.max_relative) a.max_relative = relative, a.worst_state = i, a.worst_joint = j;
      a.max_abs = std::max(a.max_abs, difference);
      a.max_per_state = std::max(a.max_per_state, difference / largest);
    }
  }
  return a;
}

struct KdlRow {
  std::string name, json;
  KdlAgreement a;
  bool double_precision = true;
  bool pass() const {
    if (!a.finite) return false;
    return double_precision ? a.max_relative <= kKdlDoubleTolerance : a.max_per_state <= kKdlFloatTolerance;
  }
};

void print_kdl_row(const KdlRow &r, const KdlChain &c) {
  std::printf("| %s | %.3e | %.3e | %.3e | state %zu, %s | %s %.0e | %s%s |\n", r.name.c_str(), r.a.max_abs,
              r.a.max_relative, r.a.max_per_state, r.a.worst_state, c.joint_names[r.a.worst_joint],
              r.double_precision ? "per torque" : "per state",
              r.double_precision ? kKdlDoubleTolerance : kKdlFloatTolerance, verdict(r.pass()),
              r.a.finite ? "" : " (non-finite torques)");
}

std::string kdl_json(const KdlRow &r) {
  char text[256];
  std::snprintf(text, sizeof text,
                "\"%s_max_abs\":%.3e,\"%s_max_relative\":%.3e,\"%s_max_per_state\":%.3e,\"%s_pass\":%s",
                r.json.c_str(), r.a.max_abs, r.json.c_str(), r.a.max_relative, r.json.c_str(), r.a.max_per_state,
                r.json.c_str(), r.pass() ? "true" : "false");
  return text;
}

std::string kdl_vector(const double *v) {
  using kiln_bench_rnea_kdl::format_double;
  return "(" + format_double(v[0]) + ", " + format_double(v[1]) + ", " + format_double(v[2]) + ")";
}

// The reasons a file and this binary's chain do not describe the same model ("" when they do).
std::string kdl_mismatch(const kiln_bench_rnea_kdl::StatesFile &f, const KdlChain &c) {
  if (f.urdf_sha256 != c.urdf_sha256) {
    return "it was made from " + f.urdf + " with SHA-256 " + f.urdf_sha256 + " (" + std::to_string(f.urdf_bytes) +
           " bytes), but this binary's " + c.id + " chain was generated from " + c.source + " with SHA-256 " +
           c.urdf_sha256 + ": another URDF, or another version of it";
  }
  if (f.dof != c.dof) return "it has " + std::to_string(f.dof) + " joints, the chain " + std::to_string(c.dof);
  for (int j = 0; j < c.dof; ++j) {
    if (f.joints[static_cast<std::size_t>(j)] != c.joint_names[j]) {
      return "its joint " + std::to_string(j) + " is " + f.joints[static_cast<std::size_t>(j)] + ", the chain's " +
             c.joint_names[j];
    }
  }
  for (int k = 0; k < 3; ++k) {
    if (f.gravity[k] != c.gravity[k]) {
      return "KDL's torques are under gravity " + kdl_vector(f.gravity) + ", the chain's kGravity is " +
             kdl_vector(c.gravity);
    }
  }
  return "";
}

int run_kdl(const std::string &path, bool cpu_only) {
  kiln_bench_rnea_kdl::StatesFile f;
  try {
    f = kiln_bench_rnea_kdl::read_states_file(path);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "kiln_bench_rnea --kdl: %s\n", error.what());
    return 2;
  }
  const std::vector<const KdlChain *> chains = kdl_chains();
  const KdlChain *chain = nullptr;
  std::string have;
  for (const KdlChain *c : chains) {
    have += std::string(have.empty() ? "" : ", ") + c->id + " (" + c->robot + " " + c->base + " -> " + c->tip + ")";
    if (f.robot == c->robot && f.root == c->base && f.tip == c->tip) chain = c;
  }
  if (chain == nullptr) {
    std::fprintf(stderr,
                 "kiln_bench_rnea --kdl: refused %s: it is for robot %s, %s -> %s, and this binary has no generated "
                 "chain for that; it has %s (bench/CMakeLists.txt: the --kdl chains)\n",
                 path.c_str(), f.robot.c_str(), f.root.c_str(), f.tip.c_str(), have.c_str());
    return 2;
  }
  const std::string mismatch = kdl_mismatch(f, *chain);
  if (!mismatch.empty()) {
    std::fprintf(stderr,
                 "kiln_bench_rnea --kdl: refused %s: %s. Regenerate the file for this binary's chain (cmake "
                 "--build BUILD --target kiln_bench_rnea_kdl_files: the URDF, root, tip and default gravity the "
                 "bench was built with; then scripts/stage-benches BUILD)\n",
                 path.c_str(), mismatch.c_str());
    return 2;
  }

  const std::size_t n = f.n, dof = static_cast<std::size_t>(f.dof), values = n * dof;
  double largest = 0;
  for (const double t : f.tau) largest = std::max(largest, std::fabs(t));
  std::size_t inexact = 0;
  for (const auto *a : {&f.q, &f.qd, &f.qdd}) {
    for (const double v : *a) inexact += static_cast<double>(static_cast<float>(v)) != v;
  }
  std::printf("kiln RNEA vs Orocos KDL: %s: %s (chain %s) %s -> %s, %zu states x %zu joints, KDL %s "
              "ChainIdSolver_RNE, seed %llu, gravity %s; %s SHA-256 %.16s... matches this binary's generated "
              "header; largest |tau_kdl| %.1f\n",
              path.c_str(), f.robot.c_str(), chain->id, f.root.c_str(), f.tip.c_str(), n, dof, f.kdl_version.c_str(),
              static_cast<unsigned long long>(f.seed), kdl_vector(f.gravity).c_str(), f.urdf.c_str(),
              f.urdf_sha256.c_str(), largest);
  if (inexact > 0) {
    std::printf("note: %zu state values are not float-representable: the fp32 rows include their rounding\n", inexact);
  }

  // Host: state-major, as the file.
  std::vector<KdlRow> rows;
  std::vector<double> tau(values);
  chain->cpu_double(f.q.data(), f.qd.data(), f.qdd.data(), n, tau.data());
  rows.push_back({"CPU double (host-compiled header)", "cpu_f64",
                  kdl_agreement(f.tau, n, f.dof, [&](std::size_t i, int j) { return tau[i * dof + j]; }), true});
  std::vector<float> q32(values), qd32(values), qdd32(values), tau32(values);
  for (std::size_t k = 0; k < values; ++k) {
    q32[k] = static_cast<float>(f.q[k]), qd32[k] = static_cast<float>(f.qd[k]), qdd32[k] = static_cast<float>(f.qdd[k]);
  }
  chain->cpu_float(q32.data(), qd32.data(), qdd32.data(), n, tau32.data());
  rows.push_back({"CPU float (host-compiled header)", "cpu_f32",
                  kdl_agreement(f.tau, n, f.dof, [&](std::size_t i, int j) { return tau32[i * dof + j]; }), false});

  const GpuInfo gpu = cpu_only ? GpuInfo{} : probe_gpu();
  std::string gpu_failure;
  if (gpu.ok) {
    // Joint-major, as the timed bench lays the states out.
    std::vector<double> jq(values), jqd(values), jqdd(values), jtau;
    std::vector<float> jq32(values), jqd32(values), jqdd32(values), jtau32;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < dof; ++j) {
        const std::size_t from = i * dof + j, to = j * n + i;
        jq[to] = f.q[from], jqd[to] = f.qd[from], jqdd[to] = f.qdd[from];
        jq32[to] = q32[from], jqd32[to] = qd32[from], jqdd32[to] = qdd32[from];
      }
    }
    gpu_failure = chain->gpu_float(jq32, jqd32, jqdd32, n, jtau32);
    if (gpu_failure.empty()) gpu_failure = chain->gpu_double(jq, jqd, jqdd, n, jtau);
    if (gpu_failure.empty()) {
      rows.push_back({"GPU fp32 (the timed kernel)", "gpu_f32",
                      kdl_agreement(f.tau, n, f.dof, [&](std::size_t i, int j) { return jtau32[j * n + i]; }), false});
      rows.push_back({"GPU fp64 (the timed kernel)", "gpu_f64",
                      kdl_agreement(f.tau, n, f.dof, [&](std::size_t i, int j) { return jtau[j * n + i]; }), true});
    }
  }

  std::printf("\n| evaluation | max \\|dtau\\| (N m) | max \\|dtau\\| / max(\\|tau_kdl\\|, 1) | max \\|dtau\\| / "
              "max(1, state's largest \\|tau_kdl\\|) | worst per torque | tolerance | verdict |\n"
              "| --- | --- | --- | --- | --- | --- | --- |\n");
  bool pass = true;
  std::string json;
  for (const KdlRow &r : rows) {
    print_kdl_row(r, *chain);
    pass = pass && r.pass();
    json += "," + kdl_json(r);
  }
  // A failed row outranks a missing GPU: 1, then 3.
  int status = pass ? 0 : 1;
  if (cpu_only) {
    std::printf("GPU rows: not run (--cpu-only)\n");
  } else if (!gpu.ok) {
    std::printf("GPU rows: NOT RUN: no CUDA device (%s); --cpu-only checks the host rows alone\n", gpu.detail.c_str());
    if (status == 0) status = 3;
  } else if (!gpu_failure.empty()) {
    std::printf("GPU rows: FAILED on %s: %s\n", gpu.name.c_str(), gpu_failure.c_str());
    status = 1;
  } else {
    std::printf("GPU: %s (sm_%d%d, %d SMs)\n", gpu.name.c_str(), gpu.major, gpu.minor, gpu.sm_count);
  }
  std::printf("overall: %s\n", status == 0 ? "PASS" : status == 3 ? "INCOMPLETE (no GPU)" : "FAIL");
  std::printf("{\"bench\":\"rnea_kdl\",\"chain\":\"%s\",\"states\":%zu,\"kdl\":\"%s\",\"gpu\":%s%s,\"pass\":%s}\n",
              chain->id, n, f.kdl_version.c_str(), gpu.ok && gpu_failure.empty() ? "true" : "false", json.c_str(),
              status == 0 ? "true" : "false");
  return status;
}

}  // namespace

int main(int argc, char **argv) {
  std::size_t max_states = std::size_t{1} << 24, cpu_states = std::size_t{1} << 20;
  int runs = 20;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::string kdl_file;
  bool cpu_only = false, timing_option = false;
  std::vector<std::size_t> chosen_sizes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cpu-only") {
      cpu_only = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    if (arg == "--kdl") {
      kdl_file = argv[++i];
      continue;
    }
    if (arg == "--batches") {
      timing_option = true;
      std::stringstream list(argv[++i]);
      for (std::string item; std::getline(list, item, ',');) {
        const long value = std::atol(item.c_str());
        if (value < 1) return usage();
        chosen_sizes.push_back(static_cast<std::size_t>(value));
      }
      if (chosen_sizes.empty()) return usage();
      std::sort(chosen_sizes.begin(), chosen_sizes.end());
      max_states = chosen_sizes.back();
      continue;
    }
    timing_option = true;
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
  if (!kdl_file.empty() || cpu_only) {
    if (kdl_file.empty() || timing_option) {
      std::fprintf(stderr, "kiln_bench_rnea: --kdl FILE [--cpu-only] is the KDL comparison alone: the timing "
                           "options do not go with it, nor --cpu-only without it\n");
      return usage();
    }
    return run_kdl(kdl_file, cpu_only);
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
  std::vector<std::size_t> sizes = chosen_sizes;
  if (sizes.empty()) {
    for (const std::size_t n : {std::size_t{1} << 20, std::size_t{1} << 22, std::size_t{1} << 24}) {
      if (n < max_states) sizes.push_back(n);
    }
    sizes.push_back(max_states);
  }
  std::vector<float> tau32;
  std::vector<double> tau64;
  const std::vector<GpuTiming> fp32 = run_gpu(single, sizes, runs, tau32);
  const std::vector<GpuTiming> fp64 = run_gpu(exact, sizes, runs, tau64);

  std::printf("\n| batch | precision | threads per block | kernel ms (median of %d, min) | kernel GPU time ms, launch "
              "queued (median, min) | M evaluations/s | with transfers ms | M evaluations/s with transfers | vs CPU 1 "
              "thread | vs CPU %u threads |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
              runs, threads);
  bool gpu_ok = true;
  for (const auto *set : {&fp32, &fp64}) {
    const char *precision = set == &fp32 ? "fp32" : "fp64";
    for (const GpuTiming &t : *set) {
      if (!t.ok) {
        std::printf("| - | %s | | failed: %s | | | | | | |\n", precision, t.error.c_str());
        gpu_ok = false;
        continue;
      }
      std::printf("| %zu | %s | %d | %.4f (%.4f) | %.4f (%.4f)%s | %.0f | %.3f | %.0f | %s | %s |\n", t.count, precision,
                  t.block, t.kernel_ms, t.kernel_min_ms, t.gpu_ms, t.gpu_min_ms,
                  t.hold_timed_out ? " (a hold timed out: may include launch time)" : "", t.per_second() / 1e6,
                  t.transfer_ms, t.per_second_with_transfers() / 1e6, ratio(t.per_second(), cpu1).c_str(),
                  ratio(t.per_second(), cpun).c_str());
    }
  }
  if (!gpu_ok) {
    std::printf("{\"bench\":\"rnea\",\"gpu\":true,\"device\":\"%s\",\"error\":true}\n", gpu.name.c_str());
    return 1;
  }
  std::printf("an empty kernel timed alike (the floor of a kernel's time): %.4f ms from the launch, %.4f ms GPU time\n"
              "threads per block: the occupancy API's, or fewer where that leaves SMs idle; %d / %d registers per "
              "thread (fp32 / fp64); transfers from %s host memory; ratios: GPU kernel alone against the CPU "
              "baseline's rate on its %zu states\n",
              fp32.front().empty_kernel_ms, fp32.front().empty_gpu_ms, fp32.front().registers, fp64.front().registers,
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
