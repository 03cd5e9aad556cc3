// gato_mpc_harness: GATO's batched SQP (BSQP) on its figure-8 end-effector tracking MPC problem,
// closed loop, without Python or Pinocchio: each MPC step solves the problem for the current state
// (batch B copies), applies the first control of the solution through GATO's own GPU integrator
// (BSQP::sim_forward, trapezoidal, sim_dt steps) for one knot interval dt, and records the solve
// time, the SQP/PCG iterations and the end-effector tracking error.
//
// Build (one binary per horizon N and batch B; GATO_DIR is the fixed copy of GATO's gato/ folder):
//   nvcc -std=c++17 -O3 -use_fast_math -arch=sm_90 -I GATO_DIR -DPLANT_IIWA14=1 -DKNOT_POINTS=64 \
//        -DBATCH=16 bench/peers/gato_mpc_harness.cu -o gato_mpc_N64_B16
// Run:
//   gato_mpc_N64_B16 [--steps S] [--dt 0.01] [--sim-dt 0.001] [--warmups W] [--commit C] [--traj FILE]
//                    [--start-q Q1,...,Q7]   (start at rest there; default q = 0, as GATO's benchmark)
// Prints one JSON line (fields: README.md beside this file); --traj writes the closed-loop joint and
// end-effector trajectory as CSV.
//
// The problem and solver settings are GATO's defaults for this benchmark (python/bsqp/config.py
// DEFAULT_SOLVER_PARAMS, FIG8_DEFAULT_PARAMS; examples/benchmark_fig8.py), each overridable:
//   max_sqp_iters 1, max_pcg_iters 200, pcg_tol 1e-4, kkt_tol 1e-3, solve_ratio 1, mu 10,
//   q_cost 2 (end-effector position tracking weight, knots 0..N-2), N_cost 50 (last knot),
//   qd_cost 1e-2, u_cost 2e-6, q_lim_cost 0.01, vel_lim_cost 0, ctrl_lim_cost 0, rho 0.01.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bsqp/bsqp.cuh"
#include "types.cuh"
#include "utils/cuda.cuh"

#ifndef BATCH
#define BATCH 1
#endif

using Real = sqp::T;  // float unless GATO is built with USE_DOUBLES
constexpr uint32_t B = BATCH;
constexpr uint32_t NK = KNOT_POINTS;
constexpr uint32_t NX = gato::constants::STATE_SIZE, NU = gato::constants::CONTROL_SIZE;
constexpr uint32_t TRAJ = gato::constants::TRAJ_SIZE;

// The limits of GATO's iiwa14 model (examples/iiwa_description/iiwa14.urdf, joints A1..A7): GATO's
// cost keeps positions inside them by barrier; velocity and effort limits are not in its cost
// (vel_lim_cost, ctrl_lim_cost 0), so the harness counts the steps that exceed them.
constexpr double kVelocityLimit[7] = {1.48353, 1.48353, 1.74533, 1.309, 2.26893, 2.35619, 2.35619};
constexpr double kEffortLimit[7] = {320, 320, 176, 176, 110, 40, 40};

// End-effector position of one configuration with GATO's own generated kinematics.
__global__ void ee_pos_kernel(Real *d_out, const Real *d_q, const grid::robotModel<Real> *model) {
  __shared__ Real s_q[grid::NUM_JOINTS], s_ee[6];
  __shared__ Real s_temp[grid::EE_POS_DYNAMIC_SHARED_MEM_COUNT + 256];
  for (int i = threadIdx.x; i < grid::NUM_JOINTS; i += blockDim.x) s_q[i] = d_q[i];
  __syncthreads();
  grid::end_effector_pose_device<Real>(s_ee, s_q, s_temp, model);
  __syncthreads();
  if (threadIdx.x < 6) d_out[threadIdx.x] = s_ee[threadIdx.x];
}

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
static double mean(const std::vector<double> &v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}
static double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, (size_t)std::ceil(p * (v.size() - 1)))];
}

int main(int argc, char **argv) {
  int steps = 300, warmups = 3;
  double dt = 0.01, sim_dt = 0.001;
  std::string commit = "unknown", traj_path;
  std::vector<double> start_q;  // --start-q: the start position (at rest); GATO's benchmark: q = 0
  // GATO's DEFAULT_SOLVER_PARAMS (python/bsqp/config.py)
  double max_sqp = 1, kkt_tol = 1e-3, max_pcg = 200, pcg_tol = 1e-4, solve_ratio = 1.0, mu = 10.0, q_cost = 2.0,
         qd_cost = 1e-2, u_cost = 2e-6, N_cost = 50.0, q_lim_cost = 0.01, vel_lim_cost = 0, ctrl_lim_cost = 0,
         rho = 0.01;
  // FIG8_DEFAULT_PARAMS
  double A_x = 0.4, A_z = 0.4, off[3] = {0.0, 0.5, 0.6}, period = 6, theta = M_PI / 4;
  int cycles = 5;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) { std::fprintf(stderr, "gato_mpc_harness: %s needs a value\n", k.c_str()); return 64; }
    const char *v = argv[++i];
    if (k == "--steps") steps = std::atoi(v);
    else if (k == "--warmups") warmups = std::atoi(v);
    else if (k == "--dt") dt = std::atof(v);
    else if (k == "--sim-dt") sim_dt = std::atof(v);
    else if (k == "--commit") commit = v;
    else if (k == "--traj") traj_path = v;
    else if (k == "--start-q") {  // Q1,...,Q7 (rad)
      for (const char *c = v; *c != '\0';) {
        char *end = nullptr;
        start_q.push_back(std::strtod(c, &end));
        if (end == c) break;
        c = *end == ',' ? end + 1 : end;
      }
    }
    else if (k == "--max-sqp-iters") max_sqp = std::atof(v);
    else if (k == "--max-pcg-iters") max_pcg = std::atof(v);
    else if (k == "--pcg-tol") pcg_tol = std::atof(v);
    else if (k == "--mu") mu = std::atof(v);
    else if (k == "--q-cost") q_cost = std::atof(v);
    else if (k == "--qd-cost") qd_cost = std::atof(v);
    else if (k == "--u-cost") u_cost = std::atof(v);
    else if (k == "--N-cost") N_cost = std::atof(v);
    else if (k == "--q-lim-cost") q_lim_cost = std::atof(v);
    else if (k == "--rho") rho = std::atof(v);
    else { std::fprintf(stderr, "gato_mpc_harness: unknown argument %s\n", k.c_str()); return 64; }
  }

  // Reference: python/bsqp/common.py figure8(dt, ...): linspace(0, 2pi, int(period/dt)) points of
  // [x y z 0 0 0], rotated by theta about z, tiled `cycles` times.
  const int P = (int)(period / dt);
  std::vector<Real> fig8;
  for (int c = 0; c < cycles; ++c)
    for (int i = 0; i < P; ++i) {
      const double t = P > 1 ? 2 * M_PI * i / (P - 1) : 0;
      const double ux = off[0] + A_x * std::sin(t), uy = off[1], uz = off[2] + A_z * std::sin(2 * t) / 2 + A_z / 2;
      const double x = std::cos(theta) * ux - std::sin(theta) * uy, y = std::sin(theta) * ux + std::cos(theta) * uy;
      const Real row[6] = {(Real)x, (Real)y, (Real)uz, 0, 0, 0};
      fig8.insert(fig8.end(), row, row + 6);
    }
  const int ref_points = (int)fig8.size() / 6;
  if (steps + (int)NK + 1 > ref_points) steps = ref_points - (int)NK - 1;

  BSQP<Real, B> solver((Real)dt, (uint32_t)max_sqp, (Real)kkt_tol, (uint32_t)max_pcg, (Real)pcg_tol, (Real)solve_ratio,
                       (Real)mu, (Real)q_cost, (Real)qd_cost, (Real)u_cost, (Real)N_cost, (Real)q_lim_cost,
                       (Real)vel_lim_cost, (Real)ctrl_lim_cost, (Real)rho);
  grid::robotModel<Real> *d_model = grid::init_robotModel<Real>();

  Real *d_xu, *d_xs, *d_ref, *d_x, *d_u, *d_xnext, *d_ee;
  gpuErrchk(cudaMalloc(&d_xu, TRAJ * B * sizeof(Real)));
  gpuErrchk(cudaMalloc(&d_xs, NX * B * sizeof(Real)));
  gpuErrchk(cudaMalloc(&d_ref, 6 * NK * B * sizeof(Real)));
  gpuErrchk(cudaMalloc(&d_x, NX * sizeof(Real)));
  gpuErrchk(cudaMalloc(&d_u, NU * sizeof(Real)));
  gpuErrchk(cudaMalloc(&d_xnext, NX * B * sizeof(Real)));
  gpuErrchk(cudaMalloc(&d_ee, 6 * sizeof(Real)));

  // Start: IIWA14_START_CONFIGS['zero'] with zero velocity; warm start = x0 at every knot, u = 0.
  std::vector<Real> x(NX, 0), xu(TRAJ, 0), xu_b(TRAJ * B), xs_b(NX * B), ref_b(6 * NK * B);
  if (!start_q.empty()) {
    if (start_q.size() != 7) { std::fprintf(stderr, "gato_mpc_harness: --start-q needs 7 joint positions\n"); return 64; }
    for (int j = 0; j < 7; ++j) x[j] = (Real)start_q[j];
  }
  auto warm_start = [&]() {
    std::fill(xu.begin(), xu.end(), 0);
    for (uint32_t k = 0; k < NK; ++k) std::copy(x.begin(), x.end(), xu.begin() + k * (NX + NU));
  };
  auto upload = [&](int offset) {
    for (uint32_t b = 0; b < B; ++b) {
      std::copy(xu.begin(), xu.end(), xu_b.begin() + b * TRAJ);
      std::copy(x.begin(), x.end(), xs_b.begin() + b * NX);
      std::copy(fig8.begin() + 6 * offset, fig8.begin() + 6 * (offset + NK), ref_b.begin() + b * 6 * NK);
    }
    gpuErrchk(cudaMemcpy(d_xu, xu_b.data(), xu_b.size() * sizeof(Real), cudaMemcpyHostToDevice));
    gpuErrchk(cudaMemcpy(d_xs, xs_b.data(), xs_b.size() * sizeof(Real), cudaMemcpyHostToDevice));
    gpuErrchk(cudaMemcpy(d_ref, ref_b.data(), ref_b.size() * sizeof(Real), cudaMemcpyHostToDevice));
  };
  ProblemInputs<Real, B> inputs;
  inputs.timestep = (Real)dt;
  inputs.d_x_s_batch = d_xs;
  inputs.d_reference_traj_batch = d_ref;

  cudaEvent_t e0, e1;
  gpuErrchk(cudaEventCreate(&e0));
  gpuErrchk(cudaEventCreate(&e1));

  warm_start();
  solver.reset_dual();
  for (int w = 0; w < std::max(1, warmups); ++w) {  // warm-up solves (as run_mpc_fig8's first solve)
    upload(0);
    solver.solve(d_xu, inputs);
  }
  gpuErrchk(cudaMemcpy(xu.data(), d_xu, TRAJ * sizeof(Real), cudaMemcpyDeviceToHost));

  std::vector<double> t_host_us, t_event_us, err_m, err_aligned_m, sqp_iters, pcg_iters;
  int over_velocity = 0, over_effort = 0;  // executed steps beyond a velocity / effort limit
  FILE *traj = traj_path.empty() ? nullptr : std::fopen(traj_path.c_str(), "w");
  if (traj) std::fprintf(traj, "step,t,ee_x,ee_y,ee_z,ref_x,ref_y,ref_z%s\n", ",q1,q2,q3,q4,q5,q6,q7");
  const int nsub = std::max(1, (int)std::lround(dt / sim_dt));
  double t_sim = 0;
  for (int s = 0; s < steps; ++s) {
    // apply the current plan's first control for one knot interval (nsub integrator steps)
    std::vector<Real> u(xu.begin() + NX, xu.begin() + NX + NU);
    bool effort_over = false;
    for (uint32_t j = 0; j < NU && j < 7; ++j) effort_over |= std::abs((double)u[j]) > kEffortLimit[j] * (1 + 1e-4);
    over_effort += effort_over;
    gpuErrchk(cudaMemcpy(d_u, u.data(), NU * sizeof(Real), cudaMemcpyHostToDevice));
    for (int i = 0; i < nsub; ++i) {
      gpuErrchk(cudaMemcpy(d_x, x.data(), NX * sizeof(Real), cudaMemcpyHostToDevice));
      solver.sim_forward(d_xnext, d_x, d_u, (Real)sim_dt);
      gpuErrchk(cudaMemcpy(x.data(), d_xnext, NX * sizeof(Real), cudaMemcpyDeviceToHost));  // batch member 0 (f_ext = 0)
      t_sim += sim_dt;
    }
    const int offset = (int)std::lround(t_sim / dt);
    if (offset + (int)NK > ref_points) break;
    // shift: new initial state into the previous solution (as run_mpc_fig8: XU[:, :nx] = x_curr)
    std::copy(x.begin(), x.end(), xu.begin());
    upload(offset);
    solver.reset_rho();
    gpuErrchk(cudaEventRecord(e0));
    SQPStats<Real, B> st = solver.solve(d_xu, inputs);
    gpuErrchk(cudaEventRecord(e1));
    gpuErrchk(cudaEventSynchronize(e1));
    float ms = 0;
    gpuErrchk(cudaEventElapsedTime(&ms, e0, e1));
    t_event_us.push_back(1000.0 * ms);
    t_host_us.push_back(st.solve_time_us);
    sqp_iters.push_back(st.sqp_iterations[0]);
    double pcg = 0;
    for (auto &p : st.pcg_stats) pcg += p.num_iterations[0];
    pcg_iters.push_back(pcg);
    gpuErrchk(cudaMemcpy(xu.data(), d_xu, TRAJ * sizeof(Real), cudaMemcpyDeviceToHost));  // batch member 0
    // tracking error as run_mpc_fig8: || ee(q) - reference of knot 1 of this window ||
    gpuErrchk(cudaMemcpy(d_x, x.data(), NX * sizeof(Real), cudaMemcpyHostToDevice));
    ee_pos_kernel<<<1, 32>>>(d_ee, d_x, d_model);
    Real ee[6];
    gpuErrchk(cudaMemcpy(ee, d_ee, sizeof ee, cudaMemcpyDeviceToHost));
    const Real *r = &fig8[6 * (offset + 1)];
    const double e = std::sqrt((ee[0] - r[0]) * (ee[0] - r[0]) + (ee[1] - r[1]) * (ee[1] - r[1]) + (ee[2] - r[2]) * (ee[2] - r[2]));
    err_m.push_back(e);
    // The same against the reference at the state's own time (knot `offset`): kiln_bench_mpc's
    // executed-knot error (GATO's own compares with the next knot's reference, one dt ahead).
    const Real *ra = &fig8[6 * offset];
    err_aligned_m.push_back(std::sqrt((ee[0] - ra[0]) * (ee[0] - ra[0]) + (ee[1] - ra[1]) * (ee[1] - ra[1]) +
                                      (ee[2] - ra[2]) * (ee[2] - ra[2])));
    bool velocity_over = false;
    for (uint32_t j = 0; j < 7 && 7 + j < NX; ++j) velocity_over |= std::abs((double)x[7 + j]) > kVelocityLimit[j] * (1 + 1e-4);
    over_velocity += velocity_over;
    if (traj) {
      std::fprintf(traj, "%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f", s, t_sim, ee[0], ee[1], ee[2], r[0], r[1], r[2]);
      for (int j = 0; j < grid::NUM_JOINTS; ++j) std::fprintf(traj, ",%.6f", x[j]);
      std::fprintf(traj, "\n");
    }
    bool finite = true;
    for (Real v : x) finite = finite && std::isfinite(v);
    if (!finite) break;
  }
  if (traj) std::fclose(traj);
  std::printf("{\"peer\":\"gato\",\"commit\":\"%s\",\"robot\":\"iiwa14(gato)\",\"start\":\"%s\",\"precision\":\"%s\",\"batch\":%u,\"N\":%u,"
              "\"dt\":%g,\"sim_dt\":%g,\"steps\":%zu,\"max_sqp_iters\":%g,\"max_pcg_iters\":%g,\"pcg_tol\":%g,"
              "\"q_cost\":%g,\"qd_cost\":%g,\"u_cost\":%g,\"N_cost\":%g,\"q_lim_cost\":%g,\"mu\":%g,\"rho\":%g,"
              "\"solve_us_median\":%.3f,\"solve_us_mean\":%.3f,\"solve_us_p95\":%.3f,\"solve_event_us_median\":%.3f,"
              "\"sqp_iters_mean\":%.3f,\"pcg_iters_mean\":%.3f,\"track_err_m_mean\":%.6f,\"track_err_m_median\":%.6f,"
              "\"track_err_m_max\":%.6f,\"track_err_m_final\":%.6f,\"track_err_aligned_m_median\":%.6f,"
              "\"track_err_aligned_m_mean\":%.6f,\"executed_over_velocity\":%d,\"executed_over_effort\":%d}\n",
              commit.c_str(), start_q.empty() ? "zero" : "given", sizeof(Real) == 8 ? "fp64" : "fp32", B, NK, dt, sim_dt, err_m.size(), max_sqp, max_pcg,
              pcg_tol, q_cost, qd_cost, u_cost, N_cost, q_lim_cost, mu, rho, median(t_host_us), mean(t_host_us),
              pct(t_host_us, 0.95), median(t_event_us), mean(sqp_iters), mean(pcg_iters), mean(err_m), median(err_m),
              err_m.empty() ? 0 : *std::max_element(err_m.begin(), err_m.end()), err_m.empty() ? 0 : err_m.back(),
              median(err_aligned_m), mean(err_aligned_m), over_velocity, over_effort);
  return 0;
}
