// GPU isolation bench: a 1 kHz control loop on one thread solving, every tick, IK (the iiwa14
// plugin, 8 targets moving smoothly, warm-started) and then TrajOpt (iiwa14, N = 32, one pose goal
// that drifts smoothly, warm-started where the plugin honours it), each a blocking solve timed from
// the call to the result on the host. Both plugins are built on miss by kiln from their recipes
// before anything is timed.
//
// Every cell of placement x storm runs --seconds at 1 kHz after 200 ticks of warm-up:
//   storms      none; stream: a GEMM storm (storm_gemm.cu) on a stream of this process;
//               process: the same storm in kiln_bench_storm, started and killed by this bench
//   placements  shared: both instances on the whole device at the default stream priority;
//               priority: their streams at the device's greatest priority (the storm at default);
//               green: GpuPartition::split(device, --solver-sms SMs): the instances in the reserved
//               share, this process's storm inside the rest (other processes are not confined);
//               green+priority: both
// Printed: per-solve latency p50/p99/p99.9/max (us) of IK and TrajOpt, the ticks whose two solves
// took longer than the 1 ms period, and the goal line: p99 under this process's storm over p99
// without one, goal <= 1.2 for the green placements (shared and priority as context).
//
//   kiln_bench_isolation [--seconds S] [--device D] [--solver-sms N] [--cache DIR] [--gemm N]
//                        [--storms none,process,stream] [--placements shared,priority,green,green+priority]
//                        [--no-fifo]
//
// Without a CUDA device it prints "skipped: no CUDA device" and exits 0.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <kiln/errors.hpp>
#include <kiln/ext/ik.h>
#include <kiln/ext/trajopt.h>
#include <kiln/log.hpp>
#include <kiln/module.hpp>
#include <kiln/placement.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "kiln_ik_batch.hpp"
#include "kiln_swap_checks.hpp"
#include "kiln_swap_loop.hpp"
#include "bench_main.hpp"
#include "bench_store.hpp"
#include "isolation_storms.hpp"
#include "storm_gemm.hpp"


namespace {

namespace sl = kiln_ik::swap_loop;
namespace storm = kiln_bench::storm;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kIkTargets = 8;
constexpr std::uint32_t kWarmupTicks = 200;
constexpr std::int64_t kPeriodNs = 1000000;  // 1 kHz

enum class Storm { none, process, stream };
enum class Placement { shared, priority, green, green_priority };

const char *name_of(Storm s) {
  switch (s) {
    case Storm::none: return "none";
    case Storm::process: return "process";
    case Storm::stream: return "stream";
  }
  return "?";
}
const char *name_of(Placement p) {
  switch (p) {
    case Placement::shared: return "shared";
    case Placement::priority: return "priority";
    case Placement::green: return "green";
    case Placement::green_priority: return "green+priority";
  }
  return "?";
}

struct Settings {
  double seconds = 5;
  int device = 0;
  unsigned solver_sms = 16;
  std::string cache;
  std::vector<Storm> storms{Storm::none, Storm::process, Storm::stream};
  std::vector<Placement> placements{Placement::shared, Placement::priority, Placement::green,
                                    Placement::green_priority};
  int gemm = 2048;
  bool fifo = true;
};

struct Latency {
  double p50 = 0, p99 = 0, p999 = 0, max = 0;
  explicit Latency(const std::vector<double> &us)
      : p50(sl::percentile(us, 0.5)), p99(sl::percentile(us, 0.99)), p999(sl::percentile(us, 0.999)),
        max(us.empty() ? 0 : *std::max_element(us.begin(), us.end())) {}
};

// One cell of the matrix as it ran: failure is set where it did not run to the end ("refused: "
// where kiln refused the placement).
struct Cell {
  std::string failure;
  std::vector<double> ik_us, trajopt_us;  // per recorded tick
  std::size_t ticks = 0, missed = 0, ik_unconverged = 0, trajopt_unconverged = 0;
  std::string scheduling;
};

// The two solver instances of one placement and their tables.
struct Solvers {
  kiln::Instance ik, trajopt;
  const kiln_ik_v1 *ik_api = nullptr;
  const kiln_trajopt_v1 *trajopt_api = nullptr;
};

// What the control loop solves: the IK targets' joint trajectories and TrajOpt's start and drifting
// goal, inside the limits.
struct Problems {
  sl::Trajectory ik_path;
  std::vector<float> start;                   // TrajOpt's q_0
  std::vector<double> goal_middle, goal_amplitude, lower, upper;
  std::uint32_t horizon = 0;
  bool trajopt_warm = false;                  // the plugin honours KILN_TRAJOPT_SOLVE_WARM_START

  std::size_t dof() const { return start.size(); }
  // TrajOpt's joint goal at tick t: a random reachable configuration drifting by a few mrad per tick.
  void goal_at(std::uint64_t t, float *q) const noexcept {
    for (std::size_t j = 0; j < goal_middle.size(); ++j) {
      const double phase = 0.002 * static_cast<double>(t) * (1.0 + 0.25 * static_cast<double>(j)) +
                           0.7 * static_cast<double>(j);
      q[j] = static_cast<float>(std::clamp(goal_middle[j] + goal_amplitude[j] * std::sin(phase), lower[j], upper[j]));
    }
  }
};

Problems make_problems(const Solvers &s) {
  Problems p;
  p.ik_path = sl::Trajectory(*s.ik_api, s.ik.handle());
  kiln_trajopt_info info{};
  info.struct_size = sizeof info;
  if (s.trajopt_api->info(s.trajopt.handle(), &info) != KILN_OK) throw std::runtime_error("kiln.trajopt/1 info failed");
  kiln_ik_info ik_info{};
  ik_info.struct_size = sizeof ik_info;
  if (s.ik_api->info(s.ik.handle(), &ik_info) != KILN_OK) throw std::runtime_error("kiln.ik/1 info failed");
  // TrajOpt's pose goals come from the IK plugin's fk: the two must be the same chain.
  if (info.dof != ik_info.dof || std::strcmp(info.base_link, ik_info.base_link) != 0 ||
      std::strcmp(info.tip_link, ik_info.tip_link) != 0) {
    throw std::runtime_error(std::string("the TrajOpt plugin's chain (") + info.base_link + " -> " + info.tip_link +
                             ") is not the IK plugin's (" + ik_info.base_link + " -> " + ik_info.tip_link + ")");
  }
  p.horizon = info.horizon;
  p.trajopt_warm = (info.solve_flags & KILN_TRAJOPT_SOLVE_WARM_START) != 0;
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (std::uint32_t j = 0; j < info.dof; ++j) {
    kiln_trajopt_joint_info joint{};
    joint.struct_size = sizeof joint;
    if (s.trajopt_api->joint_info(s.trajopt.handle(), j, &joint) != KILN_OK) {
      throw std::runtime_error("kiln.trajopt/1 joint_info failed");
    }
    const double middle = (joint.lower + joint.upper) / 2, half = (joint.upper - joint.lower) / 2;
    const double start = middle + 0.6 * half * u(rng);
    p.start.push_back(static_cast<float>(start));
    p.lower.push_back(joint.lower + 0.05);
    p.upper.push_back(joint.upper - 0.05);
    p.goal_middle.push_back(std::clamp(start + 0.5 * u(rng), p.lower.back(), p.upper.back()));
    p.goal_amplitude.push_back(std::min(0.15, half / 4));
  }
  return p;
}

// The control loop of one cell, on the calling thread: kWarmupTicks, then `seconds` recorded.
void control_loop(const Solvers &s, const Problems &p, double seconds, bool fifo, Cell &cell) {
  const std::size_t dof = p.dof();
  const auto recorded = static_cast<std::size_t>(seconds * 1e9 / static_cast<double>(kPeriodNs));
  const std::size_t total = kWarmupTicks + recorded;
  cell.ik_us.assign(recorded, 0.0);  // touched: no page fault in the loop
  cell.trajopt_us.assign(recorded, 0.0);

  kiln_ik::HostBatch ik(kIkTargets, dof);
  std::vector<float> truth(std::size_t{kIkTargets} * dof);
  kiln_ik_options ik_options{};
  ik_options.struct_size = sizeof ik_options;
  ik_options.flags = KILN_IK_SOLVE_WARM_START;
  ik.problem.options = &ik_options;

  std::vector<float> goal_q(dof), pose_goal(KILN_TRAJOPT_POSE_SIZE), plan(std::size_t{p.horizon + 1} * dof);
  std::uint8_t converged = 0;
  std::uint32_t iterations = 0;
  kiln_trajopt_options to_options{};
  to_options.struct_size = sizeof to_options;
  to_options.flags = p.trajopt_warm ? KILN_TRAJOPT_SOLVE_WARM_START : 0u;
  kiln_trajopt_problem to_problem{};
  to_problem.struct_size = sizeof to_problem;
  to_problem.count = 1;
  to_problem.memory = KILN_TRAJOPT_MEMORY_HOST;
  to_problem.q0 = p.start.data();
  to_problem.pose_goals = pose_goal.data();
  to_problem.options = &to_options;
  kiln_trajopt_result to_result{};
  to_result.struct_size = sizeof to_result;
  to_result.q = plan.data();
  to_result.converged = &converged;
  to_result.iterations = &iterations;

  char message[512] = "";
  std::string error;
  error.reserve(sizeof message);  // assigning the first failure's message allocates nothing
  cell.scheduling = sl::try_realtime(fifo);

  std::int64_t next = sl::now_ns() + kPeriodNs;
  for (std::size_t n = 0; n < total; ++n) {
    sl::sleep_until_ns(next);
    for (std::uint32_t t = 0; t < kIkTargets; ++t) p.ik_path.at(t, n, truth.data() + t * dof);
    s.ik_api->fk(s.ik.handle(), truth.data(), kIkTargets, ik.targets.data());
    const std::int64_t ik_start = sl::now_ns();
    const kiln_status ik_status = s.ik_api->solve(s.ik.handle(), &ik.problem, &ik.result, message, sizeof message);
    const std::int64_t ik_end = sl::now_ns();
    if (ik_status != KILN_OK && error.empty()) error.assign("IK solve: ").append(message);

    p.goal_at(n, goal_q.data());
    s.ik_api->fk(s.ik.handle(), goal_q.data(), 1, pose_goal.data());
    const std::int64_t to_start = sl::now_ns();
    const kiln_status to_status =
        s.trajopt_api->solve(s.trajopt.handle(), &to_problem, &to_result, message, sizeof message);
    const std::int64_t to_end = sl::now_ns();
    if (to_status != KILN_OK && error.empty()) error.assign("TrajOpt solve: ").append(message);

    const std::int64_t done = sl::now_ns();
    if (n >= kWarmupTicks) {
      const std::size_t r = n - kWarmupTicks;
      cell.ik_us[r] = static_cast<double>(ik_end - ik_start) / 1e3;
      cell.trajopt_us[r] = static_cast<double>(to_end - to_start) / 1e3;
      cell.missed += done - next > kPeriodNs ? 1 : 0;
      for (std::uint32_t t = 0; t < kIkTargets; ++t) cell.ik_unconverged += ik.converged[t] == 0 ? 1 : 0;
      cell.trajopt_unconverged += converged == 0 ? 1 : 0;
      ++cell.ticks;
    }
    next += kPeriodNs;
    while (done > next) next += kPeriodNs;  // overran: start at the next period not yet begun
  }
  if (!error.empty()) cell.failure = error;
}

// ---- the matrix ----

Solvers place(const kiln::Module &ik, const kiln::Module &trajopt, const kiln::ActivateOptions &base) {
  Solvers s{ik.create_instance(), trajopt.create_instance()};
  s.ik_api = s.ik.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
  s.trajopt_api = s.trajopt.interface<kiln_trajopt_v1>(KILN_TRAJOPT_INTERFACE_ID);
  if (s.ik_api == nullptr) throw std::runtime_error("the IK plugin offers no " KILN_IK_INTERFACE_ID);
  if (s.trajopt_api == nullptr) throw std::runtime_error("the TrajOpt plugin offers no " KILN_TRAJOPT_INTERFACE_ID);
  kiln::ActivateOptions options = base;
  options.max_batch = kIkTargets;
  s.ik.activate(options);
  options.max_batch = 1;
  s.trajopt.activate(options);
  return s;
}

Cell run_cell(const Solvers &s, const Problems &p, const Settings &settings, Storm kind,
              const std::shared_ptr<const kiln::GpuPartition> &storm_partition) {
  Cell cell;
  storm::Config config;
  config.device = settings.device;
  config.n = settings.gemm;
  std::unique_ptr<storm::StreamStorm> stream;
  std::unique_ptr<storm::ProcessStorm> process;
  std::string problem;
  try {
    if (kind == Storm::stream) {
      stream = std::make_unique<storm::StreamStorm>(config, storm_partition);
      problem = stream->wait_running();
    } else if (kind == Storm::process) {
      // Its own limit outlives the cell: it is killed at the cell's end, never left behind.
      process = std::make_unique<storm::ProcessStorm>(storm::storm_executable(), settings.device, settings.gemm,
                                               settings.seconds + 120);
      problem = process->wait_running();
    }
  } catch (const std::exception &e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    cell.failure = problem;
    return cell;
  }
  std::thread control([&] { control_loop(s, p, settings.seconds, settings.fifo, cell); });
  control.join();
  if (stream) {
    const std::string ended = stream->stop();
    std::fprintf(stderr, "kiln_bench_isolation: the storm ran %llu GEMMs\n",
                 static_cast<unsigned long long>(stream->launches()));
    if (cell.failure.empty() && !ended.empty()) cell.failure = ended;
  }
  if (process) {
    const std::string ended = process->stop();
    if (cell.failure.empty() && ended != "exit status 0") {
      cell.failure = "kiln_bench_storm: " + ended;
    }
  }
  return cell;
}

void print_row(Placement placement, Storm kind, const Cell &c) {
  if (!c.failure.empty()) {
    std::printf("| %s | %s | %s%s | | | | | | | | | |\n", name_of(placement), name_of(kind),
                c.failure.rfind("refused: ", 0) == 0 ? "" : "FAILED: ", c.failure.c_str());
    return;
  }
  const Latency ik(c.ik_us), to(c.trajopt_us);
  std::printf("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %zu of %zu | %.2f %% / %.2f %% |\n",
              name_of(placement), name_of(kind), ik.p50, ik.p99, ik.p999, ik.max, to.p50, to.p99, to.p999, to.max,
              c.missed, c.ticks,
              c.ticks ? 100.0 * static_cast<double>(c.ik_unconverged) / static_cast<double>(c.ticks * kIkTargets) : 0.0,
              c.ticks ? 100.0 * static_cast<double>(c.trajopt_unconverged) / static_cast<double>(c.ticks) : 0.0);
}

// p99 under this process's storm over p99 without one, for one placement; the reason where there is none.
void print_goal(Placement placement, const std::map<Storm, Cell> &cells) {
  const auto quiet = cells.find(Storm::none), stormy = cells.find(Storm::stream);
  std::printf("%s: ", name_of(placement));
  if (quiet == cells.end() || stormy == cells.end()) {
    std::printf("no ratio (needs the storms none and stream)\n");
    return;
  }
  if (!quiet->second.failure.empty()) {
    std::printf("baseline (no storm) failed: %s\n", quiet->second.failure.c_str());
    return;
  }
  if (!stormy->second.failure.empty()) {
    std::printf("same-process storm cell failed: %s\n", stormy->second.failure.c_str());
    return;
  }
  const double ik = Latency(stormy->second.ik_us).p99 / Latency(quiet->second.ik_us).p99;
  const double to = Latency(stormy->second.trajopt_us).p99 / Latency(quiet->second.trajopt_us).p99;
  if (placement == Placement::green || placement == Placement::green_priority) {
    std::printf("p99 ratio IK %.2f, TrajOpt %.2f (goal <= 1.2: %s)\n", ik, to,
                ik <= 1.2 && to <= 1.2 ? "met" : "NOT met");
  } else {
    std::printf("p99 ratio IK %.2f, TrajOpt %.2f (context)\n", ik, to);
  }
}

int run(const Settings &s) {
  kiln_bench::BenchStore store(s.cache, "kiln-bench-isolation");
  kiln::RuntimeOptions &options = store.options;

  kiln::Runtime runtime(options);
  const kiln::DeviceReport &devices = runtime.devices();
  if (devices.state != kiln::DriverState::ok || devices.devices.empty()) {
    std::printf("skipped: no CUDA device (%s)\n", devices.detail.c_str());
    return 0;
  }
  if (s.device >= static_cast<int>(devices.devices.size())) {
    std::fprintf(stderr, "kiln_bench_isolation: --device %d, but there are %zu devices\n", s.device,
                 devices.devices.size());
    return 2;
  }
  storm::Device device;
  if (const std::string error = storm::query_device(s.device, device); !error.empty()) {
    std::fprintf(stderr, "kiln_bench_isolation: device %d: %s\n", s.device, error.c_str());
    return 1;
  }
  std::printf("kiln isolation bench: device %d %s, %d SMs, stream priorities %d (default) to %d; store %s\n",
              s.device, device.name.c_str(), device.sm_count, device.least_priority, device.greatest_priority,
              options.cache_dir.c_str());

  // Both plugins built (or found) before anything is timed.
  kiln::LoadOptions load;
  load.device = s.device;
  const auto ensure = [&](const std::string &recipe_file) {
    const auto start = Clock::now();
    kiln::Module module = runtime.ensure(kiln::Recipe::load(recipe_file), kiln::BuildOptions{}, load);
    std::printf("  %s: %s, ready in %.2f s (before any timing)\n", recipe_file.c_str(),
                module.report().plugin_id.c_str(), std::chrono::duration<double>(Clock::now() - start).count());
    return module;
  };
  const kiln::Module ik_module = ensure(std::string(KILN_BENCH_IK_RECIPES) + "/iiwa14.json");
  const kiln::Module trajopt_module = ensure(std::string(KILN_BENCH_TRAJOPT_RECIPES) + "/trajopt-iiwa14-N32.json");

  std::map<Placement, std::map<Storm, Cell>> results;
  std::vector<std::string> notes;
  std::string scheduling;
  bool described = false;
  for (const Placement placement : s.placements) {
    auto &row = results[placement];
    const auto refuse_all = [&](const std::string &why) {
      for (const Storm kind : s.storms) row[kind].failure = why;
    };
    kiln::ActivateOptions activate;
    activate.device = s.device;
    std::shared_ptr<const kiln::GpuPartition> storm_partition;
    kiln::GpuSplit split;
    if (placement == Placement::priority || placement == Placement::green_priority) {
      activate.stream_priority = device.greatest_priority;
    }
    if (placement == Placement::green || placement == Placement::green_priority) {
      try {
        kiln::SmShare share;
        share.count = s.solver_sms;
        split = kiln::GpuPartition::split(s.device, share);
      } catch (const std::exception &e) {
        refuse_all(std::string("refused: ") + e.what());
        continue;
      }
      activate.partition = split.reserved;
      storm_partition = split.rest;
      notes.push_back(std::string(name_of(placement)) + ": solvers in " + split.reserved->describe() +
                      "; this process's storm in " +
                      (split.rest ? split.rest->describe() : std::string("(nothing: the share took every SM)")));
      if (!split.rest && std::find(s.storms.begin(), s.storms.end(), Storm::stream) != s.storms.end()) {
        row[Storm::stream].failure = "refused: the reserved share took every SM, none left for the storm";
      }
    }
    std::optional<Solvers> solvers;
    std::optional<Problems> problems;
    try {
      solvers.emplace(place(ik_module, trajopt_module, activate));
      problems.emplace(make_problems(*solvers));
    } catch (const kiln::Error &e) {
      refuse_all(std::string("refused: activate: ") + e.what());
      continue;
    } catch (const std::exception &e) {
      refuse_all(std::string("activate: ") + e.what());
      continue;
    }
    if (!described) {
      std::printf("  TrajOpt horizon N = %u, warm start %s; IK %u targets per tick, warm start\n", problems->horizon,
                  problems->trajopt_warm ? "on" : "not honoured by the plugin (off)", kIkTargets);
      described = true;
    }
    for (const Storm kind : s.storms) {
      if (!row[kind].failure.empty()) continue;  // refused above
      std::fprintf(stderr, "kiln_bench_isolation: %s / %s ...\n", name_of(placement), name_of(kind));
      row[kind] = run_cell(*solvers, *problems, s, kind, storm_partition);
      if (scheduling.empty()) scheduling = row[kind].scheduling;
    }
    solvers.reset();  // the instances go before the partition they hold
  }

  std::printf("\n1 kHz loop, %.0f s per cell after %u ticks of warm-up; control thread %s; storm: SGEMM %d^3, 4 "
              "launches in flight\n",
              s.seconds, kWarmupTicks, scheduling.empty() ? "(no cell ran)" : scheduling.c_str(),
              (s.gemm + 63) / 64 * 64);
  for (const auto &note : notes) std::printf("%s\n", note.c_str());
  // How many hardware work queues the CUDA runtime spreads this process's streams over: with few,
  // the solver's stream may queue behind the storm's whatever SMs each may use.
  const char *connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("CUDA_DEVICE_MAX_CONNECTIONS: %s\n", connections != nullptr ? connections : "unset (CUDA's default, 8)");
  std::printf("\n| placement | storm | IK p50 us | IK p99 us | IK p99.9 us | IK max us | TrajOpt p50 us | TrajOpt p99 us "
              "| TrajOpt p99.9 us | TrajOpt max us | ticks over 1 ms | unconverged IK / TrajOpt |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Placement placement : s.placements) {
    for (const Storm kind : s.storms) print_row(placement, kind, results[placement][kind]);
  }
  std::printf("\ngoal: p99 under the same-process storm / p99 without a storm, green <= 1.2\n");
  for (const Placement placement : s.placements) print_goal(placement, results[placement]);
  return 0;
}

template <class E>
std::vector<E> parse_list(const std::string &text, const std::vector<E> &all, const char *what) {
  std::vector<E> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string word = text.substr(at, comma - at);
    const auto it = std::find_if(all.begin(), all.end(), [&](E e) { return word == name_of(e); });
    if (it == all.end()) throw CLI::ValidationError(what, "unknown: '" + word + "'");
    if (std::find(out.begin(), out.end(), *it) == out.end()) out.push_back(*it);
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln_bench_isolation: IK and TrajOpt latency at 1 kHz under a GEMM storm, per GPU placement"};
  Settings s;
  std::string storms = "none,process,stream", placements = "shared,priority,green,green+priority";
  app.add_option("--seconds", s.seconds, "each cell, after the warm-up")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--device", s.device, "CUDA ordinal")->check(CLI::Range(0, 1024));
  app.add_option("--solver-sms", s.solver_sms, "SMs reserved for the solvers (green)")->check(CLI::Range(1u, 1024u));
  app.add_option("--cache", s.cache, "store to build into and load from (default: a temporary one, removed)");
  app.add_option("--storms", storms, "subset of none,process,stream");
  app.add_option("--placements", placements, "subset of shared,priority,green,green+priority");
  app.add_option("--gemm", s.gemm, "storm GEMM size n (n x n x n, rounded up to 64)")->check(CLI::Range(64, 16384));
  app.add_flag("!--no-fifo", s.fifo, "do not try SCHED_FIFO for the control thread");
  try {
    app.parse(argc, argv);
    s.storms = parse_list(storms, std::vector<Storm>{Storm::none, Storm::process, Storm::stream}, "--storms");
    s.placements = parse_list(placements,
                              std::vector<Placement>{Placement::shared, Placement::priority, Placement::green,
                                                     Placement::green_priority},
                              "--placements");
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;  // help: 0; a bad option: 2, as kiln's usage errors
  }
  return kiln_bench::run_reporting_errors("kiln_bench_isolation", [&] { return run(s); });
}
