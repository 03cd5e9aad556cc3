// kiln-swap-demo: hot swap under a running control loop. A 1 kHz control thread solves
// IK for smoothly moving targets (warm-started from each slot's last solution) through
// kiln::Swappable<kiln_ik_v1>, while a setup thread swaps the solver between two recipe variants
// (iiwa14 and iiwa14-b: other damping and iteration cap, built on miss) every --swap-every-ms,
// and every --broken-every-th request asks for the deliberately broken variant, which its
// self-test refuses while the serving version keeps serving.
//
//   kiln-swap-demo [--recipes DIR] [--seconds S] [--swap-every-ms MS] [--broken-every N]
//                  [--targets N] [--device D] [--keep-resident K] [--max-missed PERCENT] [--no-fifo] [-v]
//                  [--sm-share N] [--stream-priority P]
//
// On a GPU (--device 0, the default where a CUDA device exists) it solves on the device; without
// one it runs the plugin's host path (activate(-1)) against a declared device (KILN_DEVICE, else
// sm_90). Exit status: 0 when no wrong version and no broken version was ever served, every
// answer the served versions gave was right (re-judged with fk), the iterations right after the
// swaps did not jump toward a cold start (the warm-start state was carried) and, on a GPU, missed
// deadlines stayed within --max-missed % of the cycles (default 0.1 %; on the host path they are
// reported, not judged); 1 otherwise; kiln's exit codes on kiln errors.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <kiln/errors.hpp>
#include <kiln/ext/ik.h>
#include <kiln/placement.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>
#include <kiln/swap.hpp>

#include "kiln_swap_checks.hpp"
#include "kiln_swap_loop.hpp"

namespace {

namespace sl = kiln_ik::swap_loop;

struct Settings {
  std::string recipes = KILN_IK_RECIPES_DIR;
  double seconds = 10;
  std::uint32_t swap_every_ms = 100;
  std::uint32_t broken_every = 10;
  std::uint32_t targets = 8;
  int device = -2;  // -2: device 0 where one exists, else -1
  std::size_t keep_resident = 2;
  double max_missed_percent = 0.1;
  bool fifo = true;
  unsigned sm_share = 0;    // on a GPU: SMs reserved for the solver (a green context); 0: the whole device
  int stream_priority = 0;  // of the solver's streams
  bool carry_state = true;
  bool verbose = false;
  std::string dump;  // CSV of every cycle and every swap request
};

std::string short_key(const std::string &key) { return key.size() > 12 ? key.substr(0, 12) : key; }

int run(const Settings &s) {
  kiln::RuntimeOptions options = kiln::RuntimeOptions::from_environment();
  options.log = [&s](kiln::LogLevel level, const std::string &text) {
    if (s.verbose || level >= kiln::LogLevel::warning) {
      std::fprintf(stderr, "kiln: %s: %s\n", kiln::to_string(level), text.c_str());
    }
  };
  std::string where;
  int device = s.device;
  {
    kiln::Runtime probe(options);
    const kiln::DeviceReport &devices = probe.devices();
    const bool live = devices.state == kiln::DriverState::ok && !devices.devices.empty();
    if (device == -2) device = live ? 0 : -1;
    if (device >= 0 && !live) {
      std::fprintf(stderr, "kiln-swap-demo: --device %d asked for, but there is no CUDA device: %s\n", device,
                   devices.detail.c_str());
      return 1;
    }
    if (device < 0 && (s.sm_share > 0 || s.stream_priority != 0)) {
      std::fprintf(stderr, "kiln-swap-demo: --sm-share and --stream-priority place the solver on a GPU; the host path "
                           "(--device -1) has none\n");
      return 2;
    }
    if (!live && !options.declared_device) options.declared_device = "sm_90";
    where = device >= 0 ? "GPU device " + std::to_string(device) + " " + devices.devices.front().name
                        : "host path (activate(-1)); no CUDA device: " + devices.detail + "; declared " +
                              options.declared_device.value_or("live device");
  }
  kiln::Runtime runtime(options);
  std::vector<sl::Variant> variants = {
      {"iiwa14", kiln::Recipe::load(s.recipes + "/iiwa14.json"), false},
      {"iiwa14-b", kiln::Recipe::load(s.recipes + "/iiwa14-b.json"), false},
      {"iiwa14-broken", kiln::Recipe::load(s.recipes + "/iiwa14-broken.json"), true},
  };
  std::printf("kiln-swap-demo: %.0f s at %u Hz, %u targets per cycle, %s\n", s.seconds, 1000u, s.targets,
              where.c_str());
  std::printf("  store %s; swaps every %u ms between iiwa14 and iiwa14-b, every %u%s request iiwa14-broken; "
              "keep_resident %zu\n",
              runtime.stores().back().root.c_str(), s.swap_every_ms, s.broken_every,
              s.broken_every == 1 ? "st" : s.broken_every == 2 ? "nd" : s.broken_every == 3 ? "rd" : "th",
              s.keep_resident);

  // The first version: built on miss (or found) before the loop starts.
  const std::int64_t build_start = sl::now_ns();
  const kiln::BuildResult first = runtime.build(variants[0].recipe);
  std::printf("  iiwa14: %s in %.2f s (%s); iiwa14-b and iiwa14-broken are built on miss by the swaps\n",
              kiln::to_string(first.outcome), static_cast<double>(sl::now_ns() - build_start) / 1e9, short_key(first.content_key).c_str());

  kiln::SwapOptions swap_options = sl::ik_swap_options(variants[0].recipe, device, s.targets, s.keep_resident);
  swap_options.carry_state = s.carry_state;
  swap_options.stream_priority = s.stream_priority;
  if (s.sm_share > 0) {
    swap_options.partition = kiln::GpuPartition::split(device, kiln::SmShare{s.sm_share, 0}).reserved;
    std::printf("  every version runs in %s\n", swap_options.partition->describe().c_str());
  }
  sl::Ik ik(runtime, swap_options);
  kiln::SwapReader reader = ik.register_reader();
  const sl::FirstServed first_version = sl::first_served(ik, reader);
  const sl::Trajectory &path = first_version.path;
  const std::uint64_t initial_serial = first_version.serial;

  sl::LoopConfig loop;
  loop.seconds = s.seconds;
  loop.batch = s.targets;
  loop.realtime = s.fifo;
  sl::LoopRun run;
  std::thread control([&] { sl::control_loop(ik, reader, loop, path, run); });
  std::vector<sl::SwapEvent> events;
  events.reserve(static_cast<std::size_t>(s.seconds * 1000 / s.swap_every_ms) + 8);
  sl::SwapPlan plan;
  plan.every_ms = s.swap_every_ms;
  plan.broken_every = s.broken_every;
  const std::int64_t swaps_start = sl::now_ns();
  sl::swap_requests(ik, variants, plan, swaps_start, swaps_start + static_cast<std::int64_t>(s.seconds * 1e9), events);
  control.join();
  ik.collect();

  if (!s.dump.empty()) {
    if (FILE *out = std::fopen(s.dump.c_str(), "w")) {
      std::fprintf(out, "kind,start_ns,wake_ns,solve_ns,cycle_ns,serial,iterations,wrong,unconverged,status,skipped\n");
      for (const sl::Cycle &c : run.cycles) {
        std::fprintf(out, "cycle,%lld,%u,%u,%u,%u,%u,%u,%u,%d,%u\n", static_cast<long long>(c.start_ns), c.wake_ns,
                     c.solve_ns, c.cycle_ns, c.serial, c.iterations, c.wrong, c.unconverged, c.status, c.skipped);
      }
      for (const sl::SwapEvent &e : events) {
        std::fprintf(out, "swap,%lld,%lld,%s,%d,%llu,%.3f,%s\n", static_cast<long long>(e.request_ns),
                     static_cast<long long>(e.return_ns), variants[e.variant].label.c_str(), e.ok ? 1 : 0,
                     static_cast<unsigned long long>(e.serial), e.total_ms, e.step.c_str());
      }
      std::fclose(out);
    }
  }

  // ---- what happened ----
  const sl::Figures f = sl::figures(run, loop.period_us, loop.batch);
  sl::ServedCheck served = sl::check_served(run, events, variants, initial_serial);
  const sl::StateCheck state = sl::check_state(run, loop.batch);
  std::size_t done = 0, unchanged = 0, refused = 0, refused_at_selftest = 0, built = 0;
  std::vector<std::size_t> done_of(variants.size());
  std::vector<double> latency_publish, latency_served;
  double build_max_ms = 0;
  std::string first_refusal;
  for (const sl::SwapEvent &e : events) {
    if (e.ok && e.swapped) {
      ++done;
      ++done_of[e.variant];
      latency_publish.push_back(e.total_ms);
      if (e.served_ns >= 0) latency_served.push_back(static_cast<double>(e.served_ns - e.request_ns) / 1e6);
    } else if (e.ok) {
      ++unchanged;
    } else {
      ++refused;
      refused_at_selftest += e.step == "selftest" ? 1 : 0;
      if (first_refusal.empty()) first_refusal = e.error;
    }
    if (e.build_detail.rfind("built", 0) == 0) {
      ++built;
      build_max_ms = std::max(build_max_ms, e.build_ms);
    }
  }
  // Swap latency without the swaps that built on miss (nvcc), which are reported on their own.
  std::vector<double> hit_publish;
  for (const sl::SwapEvent &e : events) {
    if (e.ok && e.swapped && e.build_detail.rfind("built", 0) != 0) hit_publish.push_back(e.total_ms);
  }

  const bool gpu = device >= 0;
  const double missed_percent = f.cycles > 0 ? 100.0 * static_cast<double>(f.missed) / static_cast<double>(f.cycles) : 0;
  std::printf("\n  control thread: %s\n", run.scheduling.c_str());
  std::printf("  %-34s %s\n", "", "value");
  std::printf("  %-34s %zu in %.2f s\n", "cycles", f.cycles, static_cast<double>(run.end_ns - run.start_ns) / 1e9);
  std::printf("  %-34s %zu (%.3f %%; %s)\n", "missed deadlines (1 ms)", f.missed, missed_percent,
              gpu ? ("allowed " + std::to_string(s.max_missed_percent).substr(0, 4) + " %").c_str()
                  : "host path: reported, not judged");
  std::printf("  %-34s p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us\n", "cycle (start -> solved, checked)",
              f.cycle_p50_us, f.cycle_p99_us, f.cycle_p999_us, f.cycle_max_us);
  std::printf("  %-34s p50 %.1f  p99 %.1f  max %.1f us\n", "solve (acquire -> solve returned)", f.solve_p50_us,
              f.solve_p99_us, f.solve_max_us);
  std::printf("  %-34s p50 %.1f  max %.1f us\n", "wake-up lateness", f.wake_p50_us, f.wake_max_us);
  std::printf("  %-34s %zu requested: %zu done (iiwa14 %zu, iiwa14-b %zu), %zu already serving, %zu refused "
              "(%zu at selftest)\n",
              "swaps", events.size(), done, done_of[0], done_of[1], unchanged, refused, refused_at_selftest);
  if (!latency_publish.empty()) {
    std::printf("  %-34s to publish: median %.2f ms, max %.2f ms (without builds: max %.2f ms)\n",
                "swap latency (request ->)", sl::percentile(latency_publish, 0.5),
                *std::max_element(latency_publish.begin(), latency_publish.end()),
                hit_publish.empty() ? 0.0 : *std::max_element(hit_publish.begin(), hit_publish.end()));
    std::printf("  %-34s to its first solve: median %.2f ms, max %.2f ms\n", "",
                sl::percentile(latency_served, 0.5),
                latency_served.empty() ? 0.0 : *std::max_element(latency_served.begin(), latency_served.end()));
  }
  std::printf("  %-34s %zu variants built during the loop (longest %.1f s)\n", "built on miss by a swap", built,
              build_max_ms / 1e3);
  std::printf("  %-34s old version %.2f; new version's first cycle %.2f (max %.2f), its next 10 %.2f; cold %.2f\n",
              "iterations/target around swaps", state.before, state.after, state.after_max, state.steady, state.cold);
  if (state.swaps == 0) {
    std::printf("  %-34s no swap seen by the loop\n", "warm-start state carried");
  } else {
    std::printf("  %-34s %s: %zu of %zu swaps jumped toward a cold start (ordinary cycles: %.2f %% by chance)\n",
                "warm-start state carried", state.jumped == 0 ? "yes" : "SEE JUMPS", state.jumped, state.swaps,
                100 * state.chance());
  }
  std::printf("  %-34s %zu answers: %zu wrong, %zu not converged, %zu failed solves (mean %.2f iterations)\n",
              "answers re-judged with fk", f.answers, f.wrong, f.unconverged, f.failed_solves, f.mean_iterations);
  std::printf("  %-34s %s\n", "versions served", served.ok() ? "only published ones, in order; broken never"
                                                              : served.first_problem.c_str());
  if (!first_refusal.empty()) std::printf("\n  a refusal, as kiln says it:\n    %s\n", first_refusal.c_str());
  if (!run.error.empty()) std::printf("  first failed solve: %s\n", run.error.c_str());

  std::vector<std::string> failures;
  if (!served.ok()) failures.push_back("a wrong or broken version was served or a good one refused: " + served.first_problem);
  if (f.wrong > 0) failures.push_back(std::to_string(f.wrong) + " wrong answers served");
  if (f.failed_solves > 0) failures.push_back(std::to_string(f.failed_solves) + " solves failed");
  if (gpu && missed_percent > s.max_missed_percent) {
    failures.push_back("missed deadlines " + std::to_string(missed_percent) + " % > " +
                       std::to_string(s.max_missed_percent) + " %");
  }
  if (f.cycles == 0) failures.push_back("the loop ran no cycle");
  // Ordinary cycles pass the jump test by chance well under 1 % of the time (printed above); more
  // than a tenth of the swaps jumping is the state not carried.
  if (state.jumped > state.swaps / 10 + 1) {
    failures.push_back(std::to_string(state.jumped) + " of " + std::to_string(state.swaps) +
                       " swaps started the new version (nearly) cold: the warm-start state was not carried");
  }
  std::printf("\n  result: %s\n", failures.empty() ? "OK" : "FAILED");
  for (const auto &failure : failures) std::printf("    - %s\n", failure.c_str());
  return failures.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln-swap-demo: hot swap of the IK solver under a 1 kHz control loop"};
  Settings s;
  app.add_option("--recipes", s.recipes, "directory of the configured IK recipes (iiwa14.json, iiwa14-b.json, "
                                         "iiwa14-broken.json)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--seconds", s.seconds, "how long the loop runs")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--swap-every-ms", s.swap_every_ms, "a swap request every this many ms")->check(CLI::Range(1u, 600000u));
  app.add_option("--broken-every", s.broken_every, "every Nth request asks for the broken variant (0: never)");
  app.add_option("--targets,--batch", s.targets, "targets solved per cycle (max_batch)")->check(CLI::Range(1u, 65536u));
  app.add_option("--device", s.device, "CUDA device ordinal, -1 for the host path (default: 0 where a device exists)")
      ->check(CLI::Range(-1, 1024));
  app.add_option("--keep-resident", s.keep_resident,
                 "versions kept loaded (2: every swap after the first two returns to a resident version; 1: every "
                 "swap loads, activates and retires)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{16}));
  app.add_option("--max-missed", s.max_missed_percent, "on a GPU: most missed deadlines allowed, % of the cycles");
  app.add_flag("!--no-fifo", s.fifo, "do not try SCHED_FIFO for the control thread");
  app.add_option("--sm-share", s.sm_share, "on a GPU: reserve this many SMs for the solver (a green context)");
  app.add_option("--stream-priority", s.stream_priority, "on a GPU: the priority of the solver's streams (0 default, "
                                                         "negative first)");
  app.add_flag("!--no-carry-state", s.carry_state,
               "swap without export_state/import_state (a control: every new version starts cold, and the demo "
               "should report jumps)");
  app.add_flag("-v,--verbose", s.verbose, "log kiln's info messages to stderr");
  app.add_option("--dump", s.dump, "write every cycle and swap request to this CSV file");
  CLI11_PARSE(app, argc, argv);
  try {
    const int status = run(s);
    std::fflush(stdout);
    return status;
  } catch (const kiln::Error &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-swap-demo: %s\n", error.what());
    return error.exit_code();
  } catch (const std::exception &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-swap-demo: %s\n", error.what());
    return 1;
  }
}
