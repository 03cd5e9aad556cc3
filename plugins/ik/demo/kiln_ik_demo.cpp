// kiln-ik-demo: kiln's main job for the IK plugin. Builds the plugin of a recipe on miss into the
// default store (or loads what an earlier run built), loads it through kiln, and then either
// solves a batch of random reachable targets on the GPU, or, where no CUDA device exists,
// exercises the plugin's host side (negotiation, kiln.ik/1 queries, FK, the host-only solver).
//
//   kiln-ik-demo RECIPE [--targets N] [--host-targets M] [--arch LIST] [-v]
//
// Every solution is judged with the plugin's own host FK (double, rounded to float) from the
// returned joint vector: success = position error < 1 mm, orientation error < 0.01 rad and
// every joint within its limits. Exit status: 0 when at least 99 % of the targets succeed;
// 1 when fewer do or a solve fails; kiln's error codes (docs/cli.md "Exit codes") otherwise.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <kiln/errors.hpp>
#include <kiln/ext/ik.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>

#include "kiln_ik_batch.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string arch_list(const std::vector<kiln::Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "" : ",") + arch.to_string();
  return text.empty() ? "(host only)" : text;
}

const char *joint_type(int32_t type) {
  switch (type) {
    case KILN_IK_JOINT_REVOLUTE: return "revolute";
    case KILN_IK_JOINT_CONTINUOUS: return "continuous";
    case KILN_IK_JOINT_PRISMATIC: return "prismatic";
  }
  return "?";
}

// What a build reported through BuildOptions::progress (called from the building threads).
struct BuildWatch {
  std::mutex mutex;
  bool generated = false;
  bool linked = false;
  std::vector<std::string> steps;

  kiln::BuildProgress callback() {
    return [this](const kiln::BuildEvent &event) {
      std::lock_guard<std::mutex> lock(mutex);
      using Kind = kiln::BuildEvent::Kind;
      char line[256];
      switch (event.kind) {
        case Kind::generator_started:
          generated = true;
          std::printf("  generating %s ...\n", event.name.c_str());
          break;
        case Kind::generator_finished:
          std::snprintf(line, sizeof line, "generator %s %.2f s", event.name.c_str(), event.seconds);
          steps.push_back(line);
          break;
        case Kind::units_queued: std::printf("  %zu unit(s) to compile or take from the object cache\n", event.total); break;
        case Kind::unit_started: std::printf("  compiling %s (nvcc) ...\n", event.name.c_str()); break;
        case Kind::unit_finished:
          std::snprintf(line, sizeof line, "%s %s %.1f s", event.name.c_str(),
                        event.cached ? "from the object cache" : "compiled", event.seconds);
          steps.push_back(line);
          break;
        case Kind::link_started:
          linked = true;
          std::printf("  linking %s ...\n", event.name.c_str());
          break;
        case Kind::link_finished:
          std::snprintf(line, sizeof line, "link %.1f s", event.seconds);
          steps.push_back(line);
          break;
      }
      std::fflush(stdout);
    };
  }
};

struct Joint {
  std::string name;
  int32_t type = 0;
  double lower = 0;
  double upper = 0;
};

// The chain as the plugin describes it through kiln.ik/1 (no activate needed).
struct ChainInfo {
  kiln_ik_info info{};
  std::vector<Joint> joints;
};

ChainInfo query_chain(const kiln_ik_v1 &ik, const kiln::Instance &instance) {
  ChainInfo chain;
  chain.info.struct_size = sizeof chain.info;
  if (ik.info(instance.handle(), &chain.info) != KILN_OK) throw std::runtime_error("kiln.ik/1 info() failed");
  const uint32_t dof = ik.dof(instance.handle());
  for (uint32_t j = 0; j < dof; ++j) {
    kiln_ik_joint_info joint{};
    joint.struct_size = sizeof joint;
    if (ik.joint_info(instance.handle(), j, &joint) != KILN_OK) {
      throw std::runtime_error("kiln.ik/1 joint_info(" + std::to_string(j) + ") failed");
    }
    chain.joints.push_back({joint.name, joint.type, joint.lower, joint.upper});
  }
  return chain;
}


double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// One batch: targets from random in-limit joint vectors (fixed seed), the solve's outputs.
struct Batch : kiln_ik::HostBatch {
  Batch(const ChainInfo &chain, uint32_t n, uint64_t seed)
      : HostBatch(n, chain.joints.size()), count(n), dof(chain.joints.size()), truth(count * dof) {
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < count; ++i) {
      for (size_t j = 0; j < dof; ++j) {
        const Joint &joint = chain.joints[j];
        truth[i * dof + j] = static_cast<float>(std::uniform_real_distribution<double>(joint.lower, joint.upper)(rng));
      }
    }
  }

  uint32_t count;
  size_t dof;
  std::vector<float> truth;  // the joint vectors the targets were made from
};

struct Verdict {
  size_t good = 0;
  size_t converged = 0;
  size_t outside_limits = 0;
  double mean_iterations = 0;
  double position_median = 0, position_p99 = 0;        // m
  double orientation_median = 0, orientation_p99 = 0;  // rad
};

// Recomputes every error from the returned q with the plugin's host FK; trusts nothing reported.
Verdict judge(const kiln_ik_v1 &ik, const kiln::Instance &instance, const ChainInfo &chain, const Batch &batch) {
  std::vector<float> poses(size_t{batch.count} * KILN_IK_POSE_SIZE);
  if (ik.fk(instance.handle(), batch.q.data(), batch.count, poses.data()) != KILN_OK) {
    throw std::runtime_error("kiln.ik/1 fk() failed on the solutions");
  }
  Verdict v;
  std::vector<double> positions, orientations;
  double iterations = 0;
  for (size_t i = 0; i < batch.count; ++i) {
    double pe = 0, oe = 0;
    kiln_ik::pose_error(batch.targets.data() + i * KILN_IK_POSE_SIZE, poses.data() + i * KILN_IK_POSE_SIZE, pe, oe);
    bool inside = true;
    for (size_t j = 0; j < batch.dof; ++j) {
      const double value = batch.q[i * batch.dof + j];
      inside = inside && value >= chain.joints[j].lower && value <= chain.joints[j].upper;
    }
    v.outside_limits += inside ? 0 : 1;
    v.good += (inside && pe < 1e-3 && oe < 1e-2) ? 1 : 0;
    v.converged += batch.converged[i] != 0 ? 1 : 0;
    iterations += batch.iterations[i];
    positions.push_back(pe);
    orientations.push_back(oe);
  }
  v.mean_iterations = batch.count > 0 ? iterations / batch.count : 0;
  v.position_median = percentile(positions, 0.5);
  v.position_p99 = percentile(positions, 0.99);
  v.orientation_median = percentile(orientations, 0.5);
  v.orientation_p99 = percentile(orientations, 0.99);
  return v;
}

bool report_verdict(const char *where, const Verdict &v, uint32_t count) {
  const double rate = count > 0 ? 100.0 * static_cast<double>(v.good) / count : 0;
  std::printf("%s: success %zu / %u = %.2f %% (position < 1 mm, orientation < 0.01 rad, joints within limits; "
              "recomputed with the plugin's host FK)\n",
              where, v.good, count, rate);
  std::printf("  reported converged %zu, outside limits %zu, mean iterations %.1f\n", v.converged, v.outside_limits,
              v.mean_iterations);
  std::printf("  position error    median %.3g mm, p99 %.3g mm\n", 1e3 * v.position_median, 1e3 * v.position_p99);
  std::printf("  orientation error median %.3g mrad, p99 %.3g mrad\n", 1e3 * v.orientation_median,
              1e3 * v.orientation_p99);
  const bool ok = static_cast<double>(v.good) >= 0.99 * count;
  if (!ok) std::printf("%s: FAILED: fewer than 99 %% of the targets were solved\n", where);
  return ok;
}

// FK of the targets' true joint vectors: the poses to solve for.
void make_targets(const kiln_ik_v1 &ik, const kiln::Instance &instance, Batch &batch) {
  if (ik.fk(instance.handle(), batch.truth.data(), batch.count, batch.targets.data()) != KILN_OK) {
    throw std::runtime_error("kiln.ik/1 fk() failed on the targets");
  }
}

bool solve_on_gpu(const kiln_ik_v1 &ik, kiln::Instance &instance, const ChainInfo &chain, uint32_t count,
                  const kiln::DeviceReport &devices) {
  const kiln::DeviceIdentity &device = devices.devices.front();
  std::printf("GPU: device 0 %s (%s, %d SMs, %.1f GiB), driver %d\n", device.name.c_str(), device.arch_name().c_str(),
              device.sm_count, static_cast<double>(device.total_memory) / (1u << 30), devices.driver_version);
  auto start = Clock::now();
  instance.activate(0, count);
  const double activate_ms = 1e3 * seconds_since(start);
  kiln_ik_info info{};
  info.struct_size = sizeof info;
  ik.info(instance.handle(), &info);
  std::printf("activate(0, max_batch %u): %.1f ms; device memory reserved %.2f MiB, pinned host staging %.2f MiB\n",
              count, activate_ms, static_cast<double>(info.device_bytes) / (1u << 20),
              static_cast<double>(info.host_bytes) / (1u << 20));

  Batch batch(chain, count, 2024);
  make_targets(ik, instance, batch);
  char message[512] = "";
  start = Clock::now();
  if (ik.solve(instance.handle(), &batch.problem, &batch.result, message, sizeof message) != KILN_OK) {
    std::printf("solve failed: %s\n", message);
    return false;
  }
  const double first_ms = 1e3 * seconds_since(start);
  constexpr int kRuns = 20;
  std::vector<double> times;
  for (int run = 0; run < kRuns; ++run) {
    start = Clock::now();
    if (ik.solve(instance.handle(), &batch.problem, &batch.result, message, sizeof message) != KILN_OK) {
      std::printf("solve failed: %s\n", message);
      return false;
    }
    times.push_back(1e3 * seconds_since(start));
  }
  const double median_ms = percentile(times, 0.5);
  std::printf("solve %u targets (8 seeds each, host buffers, synchronous): first %.3f ms, then median %.3f ms of %d "
              "(min %.3f, max %.3f) = %.3f us per target\n",
              count, first_ms, median_ms, kRuns, *std::min_element(times.begin(), times.end()),
              *std::max_element(times.begin(), times.end()), 1e3 * median_ms / count);
  const Verdict v = judge(ik, instance, chain, batch);
  return report_verdict("GPU", v, count);
}

bool solve_on_host(const kiln_ik_v1 &ik, kiln::Instance &instance, const ChainInfo &chain, uint32_t count) {
  instance.activate(-1, count);
  Batch batch(chain, count, 2024);
  make_targets(ik, instance, batch);
  char message[512] = "";
  const auto start = Clock::now();
  if (ik.solve(instance.handle(), &batch.problem, &batch.result, message, sizeof message) != KILN_OK) {
    std::printf("host solve failed: %s\n", message);
    return false;
  }
  const double ms = 1e3 * seconds_since(start);
  std::printf("host-only solve (activate(-1, %u): the plugin's CPU path, one thread): %u targets in %.1f ms\n", count,
              count, ms);
  const Verdict v = judge(ik, instance, chain, batch);
  return report_verdict("host", v, count);
}

int run(const std::string &recipe_file, uint32_t targets, uint32_t host_targets, const std::string &archs,
        bool verbose) {
  kiln::RuntimeOptions options = kiln::RuntimeOptions::from_environment();
  options.log = [verbose](kiln::LogLevel level, const std::string &text) {
    if (verbose || level >= kiln::LogLevel::warning) std::fprintf(stderr, "kiln: %s: %s\n", kiln::to_string(level), text.c_str());
  };
  kiln::Runtime runtime(options);
  const kiln::Recipe recipe = kiln::Recipe::load(recipe_file);
  std::printf("kiln-ik-demo: recipe %s (%s/%s), store %s\n", recipe.file.c_str(), recipe.consumer.c_str(),
              recipe.name.c_str(), runtime.stores().back().root.c_str());

  // Build on miss (exactly once across processes), then load what was built.
  kiln::BuildOptions build;
  if (!archs.empty()) build.archs = kiln::Arch::parse_list(archs);
  BuildWatch watch;
  build.progress = watch.callback();
  auto start = Clock::now();
  kiln::Module module = runtime.ensure(recipe, build);
  const double ensure_s = seconds_since(start);
  const kiln::LoadReport &report = module.report();
  std::string steps;
  for (const auto &step : watch.steps) steps += (steps.empty() ? "" : ", ") + step;
  const char *outcome = watch.linked      ? "built"
                        : watch.generated ? "reused (the generated code matched an existing entry)"
                                          : "hit";
  std::printf("ensure: %s in %.3f s%s%s%s\n", outcome, ensure_s, steps.empty() ? "" : " (", steps.c_str(),
              steps.empty() ? "" : ")");
  std::printf("  entry %s, archs %s\n", report.resolution.content_key.c_str(),
              arch_list(report.resolution.identity.archs).c_str());
  std::printf("load: %s %s, ABI %u.%u, interfaces:", report.plugin_id.c_str(), report.plugin_version.c_str(),
              report.abi_version >> 16, report.abi_version & 0xffffu);
  for (const auto &id : report.interfaces) std::printf(" %s", id.c_str());
  // (ensure counts the build into its resolve step, so only the load's own steps are shown.)
  std::printf("; verify %.2f ms, dlopen %.2f ms, bind %.2f ms\n", report.timings.verify_ms, report.timings.dlopen_ms,
              report.timings.bind_ms);
  if (report.device) {
    if (report.device->declared) {
      std::printf("  checked against the declared %s: %s\n", report.device->arch_name().c_str(),
                  report.compatibility.how.c_str());
    } else {
      std::printf("  checked against device %d %s (%s): %s\n", report.device->ordinal, report.device->name.c_str(),
                  report.device->arch_name().c_str(), report.compatibility.how.c_str());
    }
  }

  kiln::Instance instance = module.create_instance();
  const auto *ik = instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
  if (ik == nullptr) {
    std::printf("the plugin does not offer %s\n", KILN_IK_INTERFACE_ID);
    return 5;
  }
  const ChainInfo chain = query_chain(*ik, instance);
  std::printf("chain: robot %s (%s), %s -> %s, %zu joints\n", chain.info.robot, chain.info.source, chain.info.base_link,
              chain.info.tip_link, chain.joints.size());
  for (size_t j = 0; j < chain.joints.size(); ++j) {
    const Joint &joint = chain.joints[j];
    std::printf("  %zu %-24s %-10s [%+.4f, %+.4f]\n", j, joint.name.c_str(), joint_type(joint.type), joint.lower,
                joint.upper);
  }
  std::vector<float> zero(chain.joints.size(), 0.0f);
  float pose[KILN_IK_POSE_SIZE];
  if (ik->fk(instance.handle(), zero.data(), 1, pose) != KILN_OK) throw std::runtime_error("kiln.ik/1 fk() failed");
  std::printf("fk(q = 0): %s at (%.4f, %.4f, %.4f) m, quaternion (w %.4f, x %.4f, y %.4f, z %.4f)\n",
              chain.info.tip_link, pose[0], pose[1], pose[2], pose[3], pose[4], pose[5], pose[6]);

  const kiln::DeviceReport &devices = runtime.devices();
  if (devices.state == kiln::DriverState::ok && !devices.devices.empty()) {
    return solve_on_gpu(*ik, instance, chain, targets, devices) ? 0 : 1;
  }
  std::printf("no CUDA device: %s; built for %s%s and exercised the host side\n", devices.detail.c_str(),
              devices.declared ? "declared " : "", arch_list(report.resolution.identity.archs).c_str());
  return solve_on_host(*ik, instance, chain, std::min(targets, host_targets)) ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln-ik-demo: build an IK plugin on miss through kiln, load it and solve"};
  std::string recipe;
  uint32_t targets = 1024;
  uint32_t host_targets = 256;
  std::string archs;
  bool verbose = false;
  app.add_option("recipe", recipe, "kiln recipe of an IK plugin (<build>/plugins/ik/recipes/iiwa14.json)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--targets", targets, "targets solved on the GPU (also max_batch)")->check(CLI::Range(1u, 1u << 24));
  app.add_option("--host-targets", host_targets, "targets solved by the host-only path where no GPU exists")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--arch", archs, "override the recipe's archs: sm_90[,sm_87]");
  app.add_flag("-v,--verbose", verbose, "log kiln's info messages to stderr");
  CLI11_PARSE(app, argc, argv);
  try {
    const int status = run(recipe, targets, host_targets, archs, verbose);
    std::fflush(stdout);
    return status;
  } catch (const kiln::Error &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-ik-demo: %s\n", error.what());
    return error.exit_code();
  } catch (const std::exception &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-ik-demo: %s\n", error.what());
    return 1;
  }
}
