// hjcd_ik_harness: HJCD-IK (generate_ik_solutions from its src/hjcd_kernel.cu, compiled into this
// file) on a list of target poses, one target at a time as HJCD-IK's own benchmark does, with B
// parallel seeds per target ("batch" in HJCD-IK's terms). Writes the joint answers to a binary file
// so that kiln's side can judge them with its own forward kinematics, and prints one JSON line.
//
// Build (HJCD_DIR: the fixed copy of HJCD-IK; HDR_DIR: the grid.cuh generated for the robot):
//   nvcc -std=c++17 -O3 -use_fast_math -Xptxas=-O3 -arch=sm_90 -I HDR_DIR -I HJCD_DIR -I HJCD_DIR/include \
//        bench/peers/hjcd_ik_harness.cu -o hjcd_ik_panda
// Run:
//   hjcd_ik_panda --targets FILE.bin --batch B [--warmups W] [--out Q.bin] [--commit C] [--robot NAME]
//   hjcd_ik_panda --random T --seed S --batch B ...   (targets sampled by HJCD-IK's own sampler)
// Targets file: T records of 7 little-endian float32, x y z qw qx qy qz (metres; unit quaternion,
// w first), no header. The answers file: one ASCII header line
//   "kiln-peer-ik 1 peer=hjcd-ik commit=C robot=R dof=D n=T batch=B layout=q[D],pos_err_mm,ori_err_rad,time_ms,pose[7]/target-major/f64le\n"
// then per target D + 3 + 7 little-endian doubles: the joint answer, HJCD-IK's own position error
// (mm) and orientation error (rad) of it, the wall time of that solve (ms), and HJCD-IK's own
// forward kinematics of the answer (x y z qw qx qy qz: the frame it solves for, to check against kiln's).
#include "src/hjcd_kernel.cu"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

static double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, (size_t)std::ceil(p * (v.size() - 1)))];
}

int main(int argc, char **argv) {
  std::string targets_path, out_path, commit = "unknown", robot = "robot";
  int batch = 1000, warmups = 3, random_n = 0;
  unsigned long long seed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) { std::fprintf(stderr, "hjcd_ik_harness: %s needs a value\n", k.c_str()); return 64; }
    const char *v = argv[++i];
    if (k == "--targets") targets_path = v;
    else if (k == "--random") random_n = std::atoi(v);
    else if (k == "--seed") seed = std::strtoull(v, nullptr, 10);
    else if (k == "--batch") batch = std::atoi(v);
    else if (k == "--warmups") warmups = std::atoi(v);
    else if (k == "--out") out_path = v;
    else if (k == "--commit") commit = v;
    else if (k == "--robot") robot = v;
    else { std::fprintf(stderr, "hjcd_ik_harness: unknown argument %s\n", k.c_str()); return 64; }
  }
  if (targets_path.empty() == (random_n == 0) || batch < 1) {
    std::fprintf(stderr, "hjcd_ik_harness: give --targets FILE or --random T, and --batch B >= 1\n");
    return 64;
  }
  auto *d_model = grid::init_robotModel<double>();
  init_joint_limits_from_grid();
  const int D = grid_num_joints();

  std::vector<std::array<double, 7>> targets;
  if (!targets_path.empty()) {
    std::ifstream in(targets_path, std::ios::binary);
    if (!in) { std::fprintf(stderr, "hjcd_ik_harness: cannot read %s\n", targets_path.c_str()); return 66; }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.empty() || bytes.size() % (7 * sizeof(float))) {
      std::fprintf(stderr, "hjcd_ik_harness: %s holds %zu bytes, not a whole number of 7-float targets\n",
                   targets_path.c_str(), bytes.size());
      return 65;
    }
    const size_t T = bytes.size() / (7 * sizeof(float));
    for (size_t t = 0; t < T; ++t) {
      float f[7];
      std::memcpy(f, bytes.data() + t * sizeof f, sizeof f);
      std::array<double, 7> p;
      for (int j = 0; j < 7; ++j) p[j] = f[j];
      targets.push_back(p);
    }
  } else {
    targets = sample_random_target_poses<double>(d_model, random_n, seed);
  }

  // warm-up solves (first-call CUDA set-up, module load) on the first target
  for (int w = 0; w < warmups; ++w) {
    double tp[7];
    for (int j = 0; j < 7; ++j) tp[j] = targets[0][j];
    auto r = generate_ik_solutions<double>(tp, d_model, batch, 1);
    delete[] r.joint_config; delete[] r.pose; delete[] r.pos_errors; delete[] r.ori_errors;
  }

  FILE *out = nullptr;
  if (!out_path.empty()) {
    out = std::fopen(out_path.c_str(), "wb");
    if (!out) { std::fprintf(stderr, "hjcd_ik_harness: cannot write %s\n", out_path.c_str()); return 73; }
    std::fprintf(out, "kiln-peer-ik 1 peer=hjcd-ik commit=%s robot=%s dof=%d n=%zu batch=%d layout=q[%d],pos_err_mm,ori_err_rad,time_ms,pose[7]/target-major/f64le\n",
                 commit.c_str(), robot.c_str(), D, targets.size(), batch, D);
  }
  std::vector<double> times, pos, ori;
  size_t within_1mm_1e2 = 0;
  for (const auto &t : targets) {
    double tp[7];
    for (int j = 0; j < 7; ++j) tp[j] = t[j];
    const auto t0 = std::chrono::steady_clock::now();
    auto r = generate_ik_solutions<double>(tp, d_model, batch, 1);
    const auto t1 = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    times.push_back(ms), pos.push_back(r.pos_errors[0]), ori.push_back(r.ori_errors[0]);
    if (r.pos_errors[0] < 1.0 && r.ori_errors[0] < 1e-2) ++within_1mm_1e2;
    if (out) {
      std::fwrite(r.joint_config, sizeof(double), D, out);
      const double extra[3] = {r.pos_errors[0], r.ori_errors[0], ms};
      std::fwrite(extra, sizeof(double), 3, out);
      std::fwrite(r.pose, sizeof(double), 7, out);
    }
    delete[] r.joint_config; delete[] r.pose; delete[] r.pos_errors; delete[] r.ori_errors;
  }
  if (out && std::fclose(out) != 0) { std::fprintf(stderr, "hjcd_ik_harness: writing %s failed\n", out_path.c_str()); return 74; }
  double tsum = 0;
  for (double x : times) tsum += x;
  std::printf("{\"peer\":\"hjcd-ik\",\"commit\":\"%s\",\"robot\":\"%s\",\"dof\":%d,\"batch\":%d,\"targets\":%zu,"
              "\"targets_source\":\"%s\",\"time_ms_median\":%.4f,\"time_ms_mean\":%.4f,\"time_ms_p95\":%.4f,"
              "\"pos_err_mm_median\":%.6g,\"pos_err_mm_p95\":%.6g,\"pos_err_mm_max\":%.6g,"
              "\"ori_err_rad_median\":%.6g,\"ori_err_rad_p95\":%.6g,\"ori_err_rad_max\":%.6g,"
              "\"frac_pos_lt_1mm_and_ori_lt_1e-2rad\":%.4f,\"answers_file\":\"%s\"}\n",
              commit.c_str(), robot.c_str(), D, batch, targets.size(),
              targets_path.empty() ? ("hjcd-random seed=" + std::to_string(seed)).c_str() : "file",
              pct(times, 0.5), tsum / std::max<size_t>(1, times.size()), pct(times, 0.95), pct(pos, 0.5), pct(pos, 0.95),
              pct(pos, 1.0), pct(ori, 0.5), pct(ori, 0.95), pct(ori, 1.0), (double)within_1mm_1e2 / std::max<size_t>(1, targets.size()),
              out_path.c_str());
  return 0;
}
