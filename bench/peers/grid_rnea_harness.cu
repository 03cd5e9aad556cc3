// grid_rnea_harness: times GRiD's RNEA kernel (inverse_dynamics_kernel of a grid.cuh that GRiD's
// generateGRiD.py wrote for one URDF) on N states, in fp32 or fp64, and writes the torques out so
// that their agreement with kiln's RNEA (or with KDL's torques in kiln's states file) can be computed.
//
// Build (GRID_HEADER_DIR holds the generated grid.cuh; REAL is float or double):
//   nvcc -std=c++17 -O3 -arch=sm_90 -DREAL=double -I GRID_HEADER_DIR -I bench \
//        bench/peers/grid_rnea_harness.cu -o grid_rnea_fp64
// (-I bench: kiln's bench/rnea_kdl_file.hpp reads kiln's states file; bench/gpu_queued_timer.cuh
// times the kernel without its launch, as kiln_bench_rnea does.)
//
// Run:
//   grid_rnea_fp64 --states FILE.bin [--runs R] [--warmups W] [--threads T] [--out TAU.bin] [--commit C]
//   grid_rnea_fp64 --batch N --seed S --ranges lo:hi:vel:acc,... [...]     (states drawn like kiln's)
//
// Prints one JSON line per run to stdout (fields: README.md beside this file). The torques file:
// one ASCII header line "kiln-peer-rnea 1 peer=grid ... layout=q,qd,qdd,tau/state-major/f64le\n",
// then q, qd, qdd, tau as 4 arrays of N x dof little-endian doubles (state-major), the same layout
// as kiln's states file, tau being GRiD's.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_queued_timer.cuh"

#include "grid.cuh"
#include "rnea_kdl_file.hpp"

#ifndef REAL
#define REAL float
#endif
using Real = REAL;

#define CHECK(call)                                                                                 \
  do {                                                                                              \
    cudaError_t err_ = (call);                                                                      \
    if (err_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "grid_rnea_harness: %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(err_), \
                   __FILE__, __LINE__);                                                             \
      std::exit(2);                                                                                 \
    }                                                                                               \
  } while (0)

namespace {

struct Args {
  std::string states, ranges, out, commit = "unknown", robot = "robot", urdf = "unknown";
  std::size_t batch = 0;
  std::uint64_t seed = 20261202;
  int runs = 50, warmups = 5, threads = 64;
  double gravity = 9.81;  // GRiD's scalar: gravity along -z
};

[[noreturn]] void usage(const char *why) {
  std::fprintf(stderr,
               "grid_rnea_harness: %s\n"
               "usage: --states FILE | --batch N --seed S --ranges lo:hi:vel:acc,...   [--runs R] [--warmups W]\n"
               "       [--threads T] [--out TAU.bin] [--commit C] [--robot NAME] [--urdf NAME] [--gravity G]\n",
               why);
  std::exit(64);
}

Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto v = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + k).c_str());
      return argv[++i];
    };
    if (k == "--states") a.states = v();
    else if (k == "--batch") a.batch = std::stoull(v());
    else if (k == "--seed") a.seed = std::stoull(v());
    else if (k == "--ranges") a.ranges = v();
    else if (k == "--runs") a.runs = std::stoi(v());
    else if (k == "--warmups") a.warmups = std::stoi(v());
    else if (k == "--threads") a.threads = std::stoi(v());
    else if (k == "--out") a.out = v();
    else if (k == "--commit") a.commit = v();
    else if (k == "--robot") a.robot = v();
    else if (k == "--urdf") a.urdf = v();
    else if (k == "--gravity") a.gravity = std::stod(v());
    else usage(("unknown argument " + k).c_str());
  }
  if (a.states.empty() == (a.batch == 0)) usage("give exactly one of --states FILE or --batch N");
  if (a.batch && a.ranges.empty()) usage("--batch needs --ranges (one lo:hi:vel:acc per joint)");
  if (a.runs < 1 || a.warmups < 0 || a.threads < 1 || a.threads > 1024) usage("bad --runs/--warmups/--threads");
  return a;
}

std::vector<std::string> split_commas(const std::string &text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char **argv) {
  const Args a = parse(argc, argv);
  const int D = grid::NUM_JOINTS;
  std::vector<double> q, qd, qdd, tau_ref;
  std::size_t n = 0;
  std::string source;

  if (!a.states.empty()) {
    const kiln_bench_rnea_kdl::StatesFile f = kiln_bench_rnea_kdl::read_states_file(a.states);
    if (f.dof != D) {
      std::fprintf(stderr, "grid_rnea_harness: %s has dof=%d, this grid.cuh has NUM_JOINTS=%d: generate the header from the same URDF\n",
                   a.states.c_str(), f.dof, D);
      return 65;
    }
    if (f.gravity[0] != 0 || f.gravity[1] != 0 || !(f.gravity[2] < 0)) {
      std::fprintf(stderr, "grid_rnea_harness: GRiD takes gravity along -z only; %s has another direction\n", a.states.c_str());
      return 65;
    }
    q = f.q, qd = f.qd, qdd = f.qdd, tau_ref = f.tau, n = f.n;
    source = "file";
  } else {
    // The states exactly as kiln's rnea_kdl_states.cpp draws them: std::mt19937_64(seed),
    // uniform_real_distribution<double>(-1, 1), per state per joint q then qd then qdd, each rounded
    // to float; q clamped to [lo, hi] after rounding.
    struct R { double lo, hi, vel, acc; };
    std::vector<R> ranges;
    for (const std::string &item : split_commas(a.ranges)) {
      R r{};
      if (std::sscanf(item.c_str(), "%lf:%lf:%lf:%lf", &r.lo, &r.hi, &r.vel, &r.acc) != 4) usage("--ranges: lo:hi:vel:acc per joint");
      ranges.push_back(r);
    }
    if ((int)ranges.size() != D) usage("--ranges must give one range per joint of grid.cuh");
    n = a.batch;
    q.resize(n * D), qd.resize(n * D), qdd.resize(n * D);
    std::mt19937_64 rng(a.seed);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    auto draw = [&](double scale, double offset) { return (double)(float)(offset + scale * unit(rng)); };
    for (std::size_t i = 0; i < n; ++i)
      for (int j = 0; j < D; ++j) {
        const R &r = ranges[j];
        const std::size_t at = i * D + j;
        q[at] = std::min(r.hi, std::max(r.lo, draw(0.5 * (r.hi - r.lo), 0.5 * (r.lo + r.hi))));
        qd[at] = draw(r.vel, 0.0);
        qdd[at] = draw(r.acc, 0.0);
      }
    source = "seed=" + std::to_string(a.seed);
  }

  // GRiD's layout: q_qd interleaved per state (stride 2D), qdd separate (stride D), c (stride D).
  Real *h_qqd, *h_qdd, *h_c;
  CHECK(cudaMallocHost(&h_qqd, sizeof(Real) * 2 * D * n));
  CHECK(cudaMallocHost(&h_qdd, sizeof(Real) * D * n));
  CHECK(cudaMallocHost(&h_c, sizeof(Real) * D * n));
  for (std::size_t i = 0; i < n; ++i)
    for (int j = 0; j < D; ++j) {
      h_qqd[i * 2 * D + j] = (Real)q[i * D + j];
      h_qqd[i * 2 * D + D + j] = (Real)qd[i * D + j];
      h_qdd[i * D + j] = (Real)qdd[i * D + j];
    }
  Real *d_qqd, *d_qdd, *d_c;
  CHECK(cudaMalloc(&d_qqd, sizeof(Real) * 2 * D * n));
  CHECK(cudaMalloc(&d_qdd, sizeof(Real) * D * n));
  CHECK(cudaMalloc(&d_c, sizeof(Real) * D * n));
  grid::robotModel<Real> *d_model = grid::init_robotModel<Real>();

  const unsigned blocks = (unsigned)std::min<std::size_t>(n, 2147483647u);
  const std::size_t shmem = grid::ID_DYNAMIC_SHARED_MEM_COUNT * sizeof(Real);
  const Real g = (Real)a.gravity;
  auto launch = [&]() {
    grid::inverse_dynamics_kernel<Real><<<blocks, a.threads, shmem>>>(d_c, d_qqd, 2 * D, d_qdd, d_model, g, (int)n);
  };
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  CHECK(cudaMemcpy(d_qqd, h_qqd, sizeof(Real) * 2 * D * n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_qdd, h_qdd, sizeof(Real) * D * n, cudaMemcpyHostToDevice));
  for (int w = 0; w < a.warmups; ++w) launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  kiln_bench_gpu::QueuedTimer queued;
  CHECK(queued.init(0));
  std::vector<double> kernel_us, gpu_us, full_us;
  for (int r = 0; r < a.runs; ++r) {  // kernel only: the states are on the GPU already
    CHECK(cudaEventRecord(e0));
    launch();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    kernel_us.push_back(1000.0 * ms);
    CHECK(queued.time(launch, &ms));  // the same launch queued behind a held stream: GPU time alone
    gpu_us.push_back(1000.0 * ms);
  }
  CHECK(cudaGetLastError());
  for (int w = 0; w < a.warmups; ++w) {
    CHECK(cudaMemcpyAsync(d_qqd, h_qqd, sizeof(Real) * 2 * D * n, cudaMemcpyHostToDevice));
    launch();
    CHECK(cudaMemcpyAsync(h_c, d_c, sizeof(Real) * D * n, cudaMemcpyDeviceToHost));
  }
  CHECK(cudaDeviceSynchronize());
  for (int r = 0; r < a.runs; ++r) {  // pinned host -> device, kernel, device -> pinned host
    CHECK(cudaEventRecord(e0));
    CHECK(cudaMemcpyAsync(d_qqd, h_qqd, sizeof(Real) * 2 * D * n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyAsync(d_qdd, h_qdd, sizeof(Real) * D * n, cudaMemcpyHostToDevice));
    launch();
    CHECK(cudaMemcpyAsync(h_c, d_c, sizeof(Real) * D * n, cudaMemcpyDeviceToHost));
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    full_us.push_back(1000.0 * ms);
  }
  CHECK(cudaGetLastError());

  std::vector<double> tau(n * D);
  for (std::size_t i = 0; i < n * D; ++i) tau[i] = (double)h_c[i];
  double max_abs = -1, max_ref = 0;
  if (!tau_ref.empty()) {
    max_abs = 0;
    for (std::size_t i = 0; i < n * D; ++i) {
      max_abs = std::max(max_abs, std::fabs(tau[i] - tau_ref[i]));
      max_ref = std::max(max_ref, std::fabs(tau_ref[i]));
    }
  }
  if (!a.out.empty()) {
    FILE *f = std::fopen(a.out.c_str(), "wb");
    if (!f) { std::fprintf(stderr, "grid_rnea_harness: cannot write %s\n", a.out.c_str()); return 73; }
    std::fprintf(f, "kiln-peer-rnea 1 peer=grid commit=%s robot=%s urdf=%s precision=%s dof=%d n=%zu states=%s gravity=0,0,%s layout=q,qd,qdd,tau/state-major/f64le\n",
                 a.commit.c_str(), a.robot.c_str(), a.urdf.c_str(), sizeof(Real) == 8 ? "fp64" : "fp32", D, n,
                 source.c_str(), kiln_bench_rnea_kdl::format_double(-a.gravity).c_str());
    for (const std::vector<double> *arr : {&q, &qd, &qdd, &tau}) std::fwrite(arr->data(), sizeof(double), n * D, f);
    if (std::fclose(f) != 0) { std::fprintf(stderr, "grid_rnea_harness: writing %s failed\n", a.out.c_str()); return 74; }
  }
  std::printf("{\"peer\":\"grid\",\"commit\":\"%s\",\"robot\":\"%s\",\"urdf\":\"%s\",\"precision\":\"%s\",\"batch\":%zu,"
              "\"states\":\"%s\",\"threads\":%d,\"blocks\":%u,\"runs\":%d,\"warmups\":%d,"
              "\"kernel_us\":%.3f,\"with_transfers_us\":%.3f,\"kernel_us_min\":%.3f,\"with_transfers_us_min\":%.3f,"
              "\"kernel_gpu_us\":%.3f,\"kernel_gpu_us_min\":%.3f,\"hold_timed_out\":%s,"
              "\"max_abs_diff_vs_file_tau\":%.9g,\"max_abs_file_tau\":%.9g,\"torques_file\":\"%s\"}\n",
              a.commit.c_str(), a.robot.c_str(), a.urdf.c_str(), sizeof(Real) == 8 ? "fp64" : "fp32", n, source.c_str(),
              a.threads, blocks, a.runs, a.warmups, median(kernel_us), median(full_us),
              *std::min_element(kernel_us.begin(), kernel_us.end()), *std::min_element(full_us.begin(), full_us.end()),
              median(gpu_us), *std::min_element(gpu_us.begin(), gpu_us.end()), queued.take_timed_out() ? "true" : "false",
              max_abs, max_ref, a.out.c_str());
  return 0;
}
