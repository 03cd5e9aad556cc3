// kiln_bench_ik_peers: kiln's IK and a peer's (bench/peers: HJCD-IK) on the same targets, judged
// by one forward kinematics in double. Three steps, each its own command, so that the targets and
// the judging run on any machine and only the solves need the GPU:
//
//   kiln_bench_ik_peers targets --plugin P --count N [--seed S] --out TARGETS
//       N reachable targets: joint vectors drawn uniformly within the limits (std::mt19937_64(S)),
//       their tip poses by the plugin's own model in double (kiln.robotmodel/1), written as 7
//       float32 each (x y z qw qx qy qz), the format bench/peers/hjcd_ik_harness.cu reads.
//   kiln_bench_ik_peers solve --plugin P --targets TARGETS --batch B --out ANSWERS
//                             [--position-tolerance M] [--orientation-tolerance RAD] [--seeds K]
//       kiln's IK on the targets, B targets per solve() (B = 1: one target per call, as a
//       controller asks), after one untimed warm-up call; the time of each call, copies included.
//   kiln_bench_ik_peers judge --plugin P --targets TARGETS ANSWERS...
//       every answers file (kiln's or a peer's: the layout below) judged alike: the answer's tip
//       pose by the plugin's model in double against its target, and every joint within its
//       limits; one JSON line per file with the success rate at three accuracies.
//
// Answers layout (bench/peers/hjcd_ik_harness.cu writes the same): one text line
//   kiln-peer-ik 1 peer=NAME commit=C robot=R dof=D n=T batch=B layout=...\n
// then per target, f64 little-endian: q[D], position error (mm), orientation error (rad) and time
// (ms) as the solver reported them, and its pose [7]. The judge recomputes both errors itself.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include <kiln/ext/ik.h>
#include <kiln/ext/robotmodel.h>
#include <kiln/runtime.hpp>

#include "bench_store.hpp"
#include "kiln_trajopt_model.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Model = kiln_trajopt_common::Model;
using Pose = std::array<double, 7>;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<Pose> read_targets(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure("cannot read the targets file " + path);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty() || bytes.size() % (7 * sizeof(float)) != 0)
    throw Failure(path + " holds " + std::to_string(bytes.size()) + " bytes, not a whole number of 7-float targets");
  std::vector<Pose> targets(bytes.size() / (7 * sizeof(float)));
  for (size_t t = 0; t < targets.size(); ++t) {
    float f[7];
    std::memcpy(f, bytes.data() + t * sizeof f, sizeof f);
    for (int k = 0; k < 7; ++k) targets[t][k] = f[k];
  }
  return targets;
}

struct Answers {
  std::string header, peer, robot;
  uint32_t dof = 0, batch = 0;
  std::vector<std::vector<double>> q;
  std::vector<double> time_ms;
};

// The value of `key=` in an answers header ("" when absent).
std::string field(const std::string &header, const std::string &key) {
  std::istringstream words(header);
  for (std::string word; words >> word;)
    if (word.compare(0, key.size() + 1, key + "=") == 0) return word.substr(key.size() + 1);
  return "";
}

Answers read_answers(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure("cannot read the answers file " + path);
  Answers a;
  std::getline(in, a.header);
  if (a.header.rfind("kiln-peer-ik 1 ", 0) != 0) throw Failure(path + " is not an answers file (no 'kiln-peer-ik 1' line)");
  a.peer = field(a.header, "peer"), a.robot = field(a.header, "robot");
  a.dof = static_cast<uint32_t>(std::stoul("0" + field(a.header, "dof")));
  a.batch = static_cast<uint32_t>(std::stoul("0" + field(a.header, "batch")));
  const size_t n = std::stoul("0" + field(a.header, "n"));
  if (a.dof == 0 || a.dof > 64 || n == 0) throw Failure(path + ": its header names no dof= or n=: " + a.header);
  std::vector<double> record(a.dof + 3 + 7);
  for (size_t t = 0; t < n; ++t) {
    if (!in.read(reinterpret_cast<char *>(record.data()), static_cast<std::streamsize>(record.size() * sizeof(double))))
      throw Failure(path + " ends after " + std::to_string(t) + " of its " + std::to_string(n) + " answers");
    a.q.emplace_back(record.begin(), record.begin() + a.dof);
    a.time_ms.push_back(record[a.dof + 2]);
  }
  return a;
}

// The angle (rad) between two quaternions (w x y z), as the TrajOpt judge measures it.
double angle_between(const double *a, const double *b) {
  return Eigen::Quaterniond(a[0], a[1], a[2], a[3]).angularDistance(Eigen::Quaterniond(b[0], b[1], b[2], b[3]));
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

// The loaded plugin: its kiln.ik/1 table, its model, activated for `max_batch` targets.
struct Loaded {
  Loaded(const std::string &plugin, uint32_t max_batch)
      : store("", "kiln-bench-ik-peers"), runtime(store.options),
        module(kiln_bench::publish_and_load(runtime, "ik-peers", plugin)), instance(module.create_instance()) {
    ik = instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
    const auto *robotmodel = instance.interface<kiln_robotmodel_v1>(KILN_ROBOTMODEL_INTERFACE_ID);
    if (ik == nullptr || robotmodel == nullptr) throw Failure(plugin + " offers no kiln.ik/1 or no kiln.robotmodel/1");
    model = kiln_trajopt_common::plugin_model(robotmodel, instance.handle(), false);
    gpu = kiln_bench::live_gpu(runtime);
    if (max_batch > 0) instance.activate(gpu ? 0 : -1, max_batch);
    device = gpu ? runtime.devices().devices.front().name : "host";
  }
  kiln_bench::BenchStore store;
  kiln::Runtime runtime;
  kiln::Module module;
  kiln::Instance instance;
  const kiln_ik_v1 *ik = nullptr;
  Model model;
  bool gpu = false;
  std::string device;
};

int write_targets(const std::string &plugin, uint32_t count, uint64_t seed, const std::string &out_path) {
  Loaded loaded(plugin, 0);
  const Model &m = loaded.model;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<float> out;
  std::vector<double> q(m.dof);
  for (uint32_t t = 0; t < count; ++t) {
    for (uint32_t j = 0; j < m.dof; ++j) {
      const double lo = m.position_limited[j] ? m.lower[j] : -3.14159265358979, hi = m.position_limited[j] ? m.upper[j] : 3.14159265358979;
      q[j] = lo + (hi - lo) * unit(rng);
    }
    double pose[7];
    m.fk(q.data(), 1, pose);
    for (double v : pose) out.push_back(static_cast<float>(v));
  }
  std::ofstream file(out_path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char *>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(float)));
  if (!file.flush()) throw Failure("writing " + out_path + " failed");
  std::printf("{\"targets\":\"%s\",\"robot\":\"%s\",\"count\":%u,\"seed\":%llu,\"model\":\"%s\"}\n", out_path.c_str(),
              m.robot.c_str(), count, static_cast<unsigned long long>(seed), m.description.c_str());
  return 0;
}

int solve(const std::string &plugin, const std::string &targets_path, uint32_t batch, const std::string &out_path,
          float position_tolerance, float orientation_tolerance, uint32_t seeds) {
  const std::vector<Pose> targets = read_targets(targets_path);
  batch = std::min<uint32_t>(std::max(1u, batch), static_cast<uint32_t>(targets.size()));
  Loaded loaded(plugin, batch);
  const uint32_t D = loaded.model.dof;
  kiln_ik_options options{};
  options.struct_size = sizeof options;
  options.position_tolerance = position_tolerance;
  options.orientation_tolerance = orientation_tolerance;
  options.seeds_per_target = seeds;
  std::vector<float> in(size_t{batch} * 7), q(size_t{batch} * D), position_error(batch), orientation_error(batch);
  std::vector<uint8_t> converged(batch);
  kiln_ik_problem problem{};
  problem.struct_size = sizeof problem;
  problem.memory = KILN_IK_MEMORY_HOST;
  problem.targets = in.data();
  problem.options = &options;
  kiln_ik_result result{};
  result.struct_size = sizeof result;
  result.q = q.data(), result.position_error = position_error.data(), result.orientation_error = orientation_error.data();
  result.converged = converged.data();
  char message[512] = "";
  const auto call = [&](size_t first, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i)
      for (int k = 0; k < 7; ++k) in[size_t{i} * 7 + k] = static_cast<float>(targets[first + i][k]);
    problem.count = count;
    if (loaded.ik->solve(loaded.instance.handle(), &problem, &result, message, sizeof message) != KILN_OK)
      throw Failure(std::string("solve failed: ") + message);
  };
  call(0, batch);  // warm-up: first use of the kernels, untimed
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  char header[512];
  std::snprintf(header, sizeof header,
                "kiln-peer-ik 1 peer=kiln commit=%s robot=%s dof=%u n=%zu batch=%u layout=q[%u],pos_err_mm,ori_err_rad,time_ms,pose[7]/target-major/f64le\n",
                loaded.module.report().plugin_id.c_str(), loaded.model.robot.c_str(), D, targets.size(), batch, D);
  out << header;
  std::vector<double> call_ms, per_target_ms;
  uint32_t solved = 0;
  for (size_t first = 0; first < targets.size(); first += batch) {
    const uint32_t count = static_cast<uint32_t>(std::min<size_t>(batch, targets.size() - first));
    const auto start = Clock::now();
    call(first, count);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    call_ms.push_back(ms);
    for (uint32_t i = 0; i < count; ++i) {
      std::vector<double> record(D + 3 + 7, 0.0);
      for (uint32_t j = 0; j < D; ++j) record[j] = q[size_t{i} * D + j];
      record[D] = 1e3 * position_error[i], record[D + 1] = orientation_error[i], record[D + 2] = ms / count;
      loaded.model.fk(record.data(), 1, record.data() + D + 3);
      out.write(reinterpret_cast<const char *>(record.data()), static_cast<std::streamsize>(record.size() * sizeof(double)));
      per_target_ms.push_back(ms / count);
      solved += converged[i];
    }
  }
  if (!out.flush()) throw Failure("writing " + out_path + " failed");
  std::printf("{\"solver\":\"kiln\",\"plugin\":\"%s\",\"device\":\"%s\",\"robot\":\"%s\",\"batch\":%u,\"targets\":%zu,"
              "\"position_tolerance_m\":%g,\"orientation_tolerance_rad\":%g,\"seeds\":%u,\"call_ms_median\":%.4f,"
              "\"call_ms_p99\":%.4f,\"per_target_ms_median\":%.5f,\"converged_reported\":%u,\"answers_file\":\"%s\"}\n",
              loaded.module.report().plugin_id.c_str(), loaded.device.c_str(), loaded.model.robot.c_str(), batch,
              targets.size(), position_tolerance, orientation_tolerance, seeds, percentile(call_ms, 0.5),
              percentile(call_ms, 0.99), percentile(per_target_ms, 0.5), solved, out_path.c_str());
  return 0;
}

int judge(const std::string &plugin, const std::string &targets_path, const std::vector<std::string> &answer_paths) {
  const std::vector<Pose> targets = read_targets(targets_path);
  Loaded loaded(plugin, 0);
  const Model &m = loaded.model;
  // Accuracies judged: kiln's interface tolerances and two tighter ones (mm, rad).
  const double levels[3][2] = {{1.0, 1e-2}, {0.1, 1e-3}, {0.01, 1e-4}};
  for (const std::string &path : answer_paths) {
    const Answers a = read_answers(path);
    if (a.dof != m.dof || a.q.size() != targets.size())
      throw Failure(path + " answers " + std::to_string(a.q.size()) + " targets of " + std::to_string(a.dof) +
                    " joints; " + targets_path + " holds " + std::to_string(targets.size()) + " and the plugin's chain " +
                    std::to_string(m.dof));
    std::vector<double> position_mm, orientation;
    uint32_t within_limits = 0, success[3] = {0, 0, 0};
    for (size_t t = 0; t < targets.size(); ++t) {
      double pose[7];
      m.fk(a.q[t].data(), 1, pose);
      const double dx = pose[0] - targets[t][0], dy = pose[1] - targets[t][1], dz = pose[2] - targets[t][2];
      const double p = 1e3 * std::sqrt(dx * dx + dy * dy + dz * dz), o = angle_between(pose + 3, targets[t].data() + 3);
      position_mm.push_back(p), orientation.push_back(o);
      bool inside = true;
      for (uint32_t j = 0; j < m.dof; ++j)
        inside = inside && std::isfinite(a.q[t][j]) &&
                 (!m.position_limited[j] || (a.q[t][j] >= m.lower[j] - 1e-9 && a.q[t][j] <= m.upper[j] + 1e-9));
      within_limits += inside;
      for (int l = 0; l < 3; ++l) success[l] += inside && p < levels[l][0] && o < levels[l][1];
    }
    const double n = static_cast<double>(targets.size());
    std::printf("{\"judged\":\"%s\",\"peer\":\"%s\",\"robot\":\"%s\",\"batch\":%u,\"targets\":%zu,\"judge\":\"%s\","
                "\"within_limits\":%.4f,\"success_1mm_1e-2rad\":%.4f,\"success_0.1mm_1e-3rad\":%.4f,"
                "\"success_0.01mm_1e-4rad\":%.4f,\"pos_err_mm_median\":%.3g,\"pos_err_mm_p99\":%.3g,\"pos_err_mm_max\":%.3g,"
                "\"ori_err_rad_median\":%.3g,\"ori_err_rad_p99\":%.3g,\"ori_err_rad_max\":%.3g,\"time_ms_median\":%.5f}\n",
                path.c_str(), a.peer.c_str(), a.robot.c_str(), a.batch, targets.size(), m.description.c_str(),
                within_limits / n, success[0] / n, success[1] / n, success[2] / n, percentile(position_mm, 0.5),
                percentile(position_mm, 0.99), percentile(position_mm, 1.0), percentile(orientation, 0.5),
                percentile(orientation, 0.99), percentile(orientation, 1.0), percentile(a.time_ms, 0.5));
  }
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: kiln_bench_ik_peers targets --plugin P --count N [--seed S] --out TARGETS\n"
               "       kiln_bench_ik_peers solve --plugin P --targets TARGETS --batch B --out ANSWERS\n"
               "                                 [--position-tolerance M] [--orientation-tolerance RAD] [--seeds K]\n"
               "       kiln_bench_ik_peers judge --plugin P --targets TARGETS ANSWERS...\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const std::string verb = argv[1];
  std::string plugin, targets, out;
  uint32_t count = 0, batch = 1, seeds = 0;
  uint64_t seed = 0;
  float position_tolerance = 1e-3f, orientation_tolerance = 1e-2f;
  std::vector<std::string> rest;
  try {
    for (int a = 2; a < argc; ++a) {
      const std::string key = argv[a];
      const bool has_value = a + 1 < argc;
      if (key == "--plugin" && has_value) plugin = argv[++a];
      else if (key == "--targets" && has_value) targets = argv[++a];
      else if (key == "--out" && has_value) out = argv[++a];
      else if (key == "--count" && has_value) count = static_cast<uint32_t>(std::stoul(argv[++a]));
      else if (key == "--seed" && has_value) seed = std::stoull(argv[++a]);
      else if (key == "--batch" && has_value) batch = static_cast<uint32_t>(std::stoul(argv[++a]));
      else if (key == "--seeds" && has_value) seeds = static_cast<uint32_t>(std::stoul(argv[++a]));
      else if (key == "--position-tolerance" && has_value) position_tolerance = std::stof(argv[++a]);
      else if (key == "--orientation-tolerance" && has_value) orientation_tolerance = std::stof(argv[++a]);
      else if (key.rfind("--", 0) == 0) return usage();
      else rest.push_back(key);
    }
    if (plugin.empty()) return usage();
    if (verb == "targets" && count > 0 && !out.empty()) return write_targets(plugin, count, seed, out);
    if (verb == "solve" && !targets.empty() && !out.empty()) {
      return solve(plugin, targets, batch, out, position_tolerance, orientation_tolerance, seeds);
    }
    if (verb == "judge" && !targets.empty() && !rest.empty()) return judge(plugin, targets, rest);
    return usage();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln_bench_ik_peers: %s\n", e.what());
    return 1;
  }
}
