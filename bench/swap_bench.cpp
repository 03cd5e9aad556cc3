// Hot-swap bench, two parts, each against a baseline measured in the same run:
//
// (a) The control thread's cost of one cycle's acquire + quiescent announcement, against a plain
//     atomic (acquire) load: batches of --batch calls timed with steady_clock and divided, the two
//     kinds interleaved round by round (which goes first alternates). Median and p99.9 in ns.
//     Goal: median <= 20 ns.
// (b) The 1 kHz loop of kiln-swap-demo (plugins/ik/demo/kiln_swap_loop.hpp: SCHED_FIFO where
//     permitted, a real IK solve per cycle, warm-started) for --seconds without swaps, then for
//     --seconds with a swap every --swap-every-ms between iiwa14 and iiwa14-b, in this process:
//     missed deadlines (goal 0), worst cycle with vs without swaps (goal: the swaps add <= 5 us),
//     swap latency from the request to the new version published and to its first solve (median,
//     max), RSS and (on a GPU) device memory after the swap run vs before it.
//
//   kiln_bench_swap [--seconds S] [--swap-every-ms MS] [--targets N] [--device D] [--keep-resident K]
//                   [--rounds N] [--batch N] [--cache DIR] [--no-fifo] [--forbid-syscalls]
//                   [--allow-syscalls CALL,...]
//     --seconds     each run of the loop (default 60; a 2-core x86-64 machine runs 5)
//     --device      CUDA ordinal, -1 the host path (default: 0 where a device exists, else -1 against
//                   a declared sm_90 unless KILN_DEVICE says otherwise)
//     --keep-resident  1 (default): every swap loads, activates, self-tests and retires a version;
//                   2: after the first two swaps, every swap returns to a resident version
//     --cache       store to build into (default: a temporary one, removed)
//     --forbid-syscalls  (b)'s control thread under a seccomp filter of its own (clock_nanosleep and
//                   clock_gettime only), its heap calls counted: a forbidden call names itself and
//                   kills the bench with SIGSYS (bench_forbidden_calls.hpp; built with libseccomp)
//     --allow-syscalls  with it, more calls allowed (futex,...): what a device solve needs
// Both variants are built (or found) before anything is timed: the swap figures are swaps, not nvcc.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <kiln/errors.hpp>
#include <kiln/ext/ik.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>
#include <kiln/swap.hpp>

#include "bench_main.hpp"
#include "bench_store.hpp"
#include "device/driver.hpp"
#include "kiln_swap_checks.hpp"
#include "kiln_swap_loop.hpp"
#if KILN_BENCH_SECCOMP
#include "bench_forbidden_calls.hpp"
#endif

namespace {

namespace sl = kiln_ik::swap_loop;
using Clock = std::chrono::steady_clock;

struct Settings {
  double seconds = 60;
  std::uint32_t swap_every_ms = 100;
  std::uint32_t targets = 8;
  int device = -2;
  std::size_t keep_resident = 1;
  std::uint32_t rounds = 20000;
  std::uint32_t batch = 256;
  std::string cache;
  bool fifo = true;
  bool forbid_syscalls = false;
  std::vector<std::string> allow_syscalls;  // --allow-syscalls: allowed beside the loop's own
};

// Device memory in use on `ordinal` (total - free, cuMemGetInfo in the primary context, which
// the plugin's cudart shares). Empty where the driver cannot tell.
std::optional<std::size_t> device_used(int ordinal) {
  if (ordinal < 0) return std::nullopt;
  auto &driver = kiln::device::Driver::instance();
  if (!driver.ok()) return std::nullopt;
  const auto retain = driver.proc_as<decltype(&::cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain");
  const auto release = driver.proc_as<decltype(&::cuDevicePrimaryCtxRelease)>("cuDevicePrimaryCtxRelease");
  const auto push = driver.proc_as<decltype(&::cuCtxPushCurrent)>("cuCtxPushCurrent");
  const auto pop = driver.proc_as<decltype(&::cuCtxPopCurrent)>("cuCtxPopCurrent");
  const auto mem_info = driver.proc_as<decltype(&::cuMemGetInfo)>("cuMemGetInfo");
  if (!retain || !release || !push || !pop || !mem_info) return std::nullopt;
  CUdevice device = 0;
  if (driver.api().device_get(&device, ordinal) != CUDA_SUCCESS) return std::nullopt;
  CUcontext context = nullptr;
  if (retain(&context, device) != CUDA_SUCCESS) return std::nullopt;
  std::optional<std::size_t> used;
  if (push(context) == CUDA_SUCCESS) {
    std::size_t free = 0, total = 0;
    if (mem_info(&free, &total) == CUDA_SUCCESS) used = total - free;
    CUcontext popped = nullptr;
    pop(&popped);
  }
  release(device);
  return used;
}

double median_of(std::vector<double> v) { return sl::percentile(std::move(v), 0.5); }
double max_of(const std::vector<double> &v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

// (a) acquire + quiescent vs a plain atomic load, ns per call.
struct CallCost {
  std::vector<double> swap_ns, plain_ns;
};

CallCost measure_calls(const sl::Ik &ik, kiln::SwapReader &reader, std::uint32_t rounds, std::uint32_t batch) {
  static int anchor = 0;
  std::atomic<const void *> plain{&anchor};
  std::uint64_t sink = 0;
  CallCost cost;
  cost.swap_ns.reserve(rounds);
  cost.plain_ns.reserve(rounds);
  reader.online();
  auto swap_batch = [&] {
    const auto start = Clock::now();
    for (std::uint32_t i = 0; i < batch; ++i) {
      const auto served = ik.acquire(reader);
      sink += served.serial;
      reader.quiescent();
    }
    cost.swap_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / batch);
  };
  auto plain_batch = [&] {
    const auto start = Clock::now();
    for (std::uint32_t i = 0; i < batch; ++i) {
      sink += reinterpret_cast<std::uintptr_t>(plain.load(std::memory_order_acquire));
    }
    cost.plain_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / batch);
  };
  for (std::uint32_t r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      swap_batch();
      plain_batch();
    } else {
      plain_batch();
      swap_batch();
    }
  }
  reader.offline();
  if (sink == 42) std::printf(" ");  // keeps the sums alive
  return cost;
}

std::string us(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

int run(const Settings &s) {
  kiln_bench::BenchStore store(s.cache, "kiln-bench-swap");
  kiln::RuntimeOptions &options = store.options;

  int device = s.device;
  std::string where;
  {
    kiln::Runtime probe(options);
    const kiln::DeviceReport &devices = probe.devices();
    const bool live = devices.state == kiln::DriverState::ok && !devices.devices.empty();
    if (device == -2) device = live ? 0 : -1;
    if (device >= 0 && !live) {
      std::fprintf(stderr, "kiln_bench_swap: --device %d, but no CUDA device: %s\n", device, devices.detail.c_str());
      return 1;
    }
    if (!live && !options.declared_device) options.declared_device = "sm_90";
    where = device >= 0 ? "device " + std::to_string(device) + " " + devices.devices.front().name
                        : "host path (activate(-1)), no CUDA device (" + devices.detail + "), declared " +
                              options.declared_device.value_or("-");
  }
  kiln::Runtime runtime(options);
  std::vector<sl::Variant> variants = {
      {"iiwa14", kiln::Recipe::load(std::string(KILN_BENCH_IK_RECIPES) + "/iiwa14.json"), false},
      {"iiwa14-b", kiln::Recipe::load(std::string(KILN_BENCH_IK_RECIPES) + "/iiwa14-b.json"), false},
  };
  std::printf("kiln swap bench: %s; store %s\n", where.c_str(), options.cache_dir.c_str());
  for (const auto &v : variants) {
    const auto start = Clock::now();
    const kiln::BuildResult built = runtime.build(v.recipe);
    std::printf("  %s: %s in %.2f s (before any timing)\n", v.label.c_str(), kiln::to_string(built.outcome),
                std::chrono::duration<double>(Clock::now() - start).count());
  }

  kiln::SwapOptions swap_options = sl::ik_swap_options(variants[0].recipe, device, s.targets, s.keep_resident);
  sl::Ik ik(runtime, swap_options);
  kiln::SwapReader reader = ik.register_reader();
  const sl::FirstServed first_version = sl::first_served(ik, reader);
  const sl::Trajectory &path = first_version.path;
  std::uint64_t initial_serial = first_version.serial;

  // ---- (a) ----
  const CallCost cost = measure_calls(ik, reader, s.rounds, s.batch);
  const double swap_median = median_of(cost.swap_ns), plain_median = median_of(cost.plain_ns);
  const double swap_p999 = sl::percentile(cost.swap_ns, 0.999), plain_p999 = sl::percentile(cost.plain_ns, 0.999);
  std::printf("\n(a) control-thread cost per cycle, %u rounds of %u calls each, interleaved (ns per call)\n\n",
              s.rounds, s.batch);
  std::printf("| what | median ns | p99.9 ns |\n| --- | --- | --- |\n");
  std::printf("| acquire + quiescent | %.2f | %.2f |\n", swap_median, swap_p999);
  std::printf("| plain atomic load (baseline) | %.2f | %.2f |\n", plain_median, plain_p999);
  std::printf("acquire + quiescent costs %.2f ns more than the plain load (median); goal median <= 20 ns: %s\n",
              swap_median - plain_median, swap_median <= 20 ? "met" : "NOT met");

  // ---- (b) ----
  sl::LoopConfig loop;
  loop.seconds = s.seconds;
  loop.batch = s.targets;
  loop.realtime = s.fifo;
  sl::LoopRun quiet, swapping;
#if KILN_BENCH_SECCOMP
  kiln_bench::ForbiddenCalls forbidden;
  kiln_bench::ForbiddenCalls *forbidding = s.forbid_syscalls ? &forbidden : nullptr;
  if (forbidding != nullptr) {
    forbidden.also_allowed = s.allow_syscalls;
    kiln_bench::watch_forbidden_calls();
    loop.loop_starts = [&forbidden] { forbidden.starts(); };
    loop.loop_ends = [&forbidden] { forbidden.ends(); };
  }
  const auto run_control = [&](sl::LoopRun &run) {
    kiln_bench::run_control_thread(forbidding, [&] { sl::control_loop(ik, reader, loop, path, run); });
  };
#else
  const auto run_control = [&](sl::LoopRun &run) {
    std::thread control([&] { sl::control_loop(ik, reader, loop, path, run); });
    control.join();
  };
#endif
  run_control(quiet);
  // Warm-up, not timed (the reader is offline): a swap to iiwa14-b and back, so that both files
  // were loaded once (a plugin with device code stays mapped after retirement, and what its first
  // load registered with the CUDA runtime stays too); "before" is after it.
  const std::size_t rss_first = sl::rss_kb();
  const std::optional<std::size_t> device_first = device_used(device);
  sl::swap_once(ik, variants, 1);
  sl::swap_once(ik, variants, 0);
  ik.collect();
  initial_serial = ik.resident().front().serial;  // what serves when the swap run starts
  const std::size_t rss_before = sl::rss_kb();
  const std::optional<std::size_t> device_before = device_used(device);
  std::vector<sl::SwapEvent> events;
  events.reserve(static_cast<std::size_t>(s.seconds * 1000 / s.swap_every_ms) + 8);
  loop.first_cycle = quiet.cycles.size();  // the trajectory goes on where it stopped: the state stays warm
  {
    std::thread swapper([&] {
      sl::SwapPlan plan;
      plan.every_ms = s.swap_every_ms;
      const std::int64_t start = sl::now_ns();
      sl::swap_requests(ik, variants, plan, start, start + static_cast<std::int64_t>(s.seconds * 1e9), events);
    });
    run_control(swapping);
    swapper.join();
  }
  const std::size_t pending = ik.collect();
  const std::size_t rss_after = sl::rss_kb();
  const std::optional<std::size_t> device_after = device_used(device);

  const sl::Figures a = sl::figures(quiet, loop.period_us, loop.batch);
  const sl::Figures b = sl::figures(swapping, loop.period_us, loop.batch);
  const sl::ServedCheck served = sl::check_served(swapping, events, variants, initial_serial);
  std::vector<double> to_publish, to_first_solve;
  std::size_t done = 0, refused = 0;
  std::string first_error;
  for (const auto &e : events) {
    if (e.ok && e.swapped) {
      ++done;
      to_publish.push_back(e.total_ms);
      if (e.served_ns >= 0) to_first_solve.push_back(static_cast<double>(e.served_ns - e.request_ns) / 1e6);
    } else if (!e.ok) {
      ++refused;
      if (first_error.empty()) first_error = e.error;
    }
  }
  const bool quiet_ok = a.cycles > 0 && a.failed_solves == 0 && a.wrong == 0;
  std::printf("\n(b) 1 kHz loop, %u targets per cycle, warm-started, %.0f s each run; control thread %s; "
              "keep_resident %zu\n\n",
              s.targets, s.seconds, swapping.scheduling.c_str(), s.keep_resident);
  std::printf("| run | cycles | missed | cycle p50 us | p99.9 us | worst us | solve p50 us | wrong answers |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  auto row = [](const char *name, const sl::Figures &f, bool ok) {
    if (!ok) {
      std::printf("| %s | %zu | FAILED (%zu failed solves, %zu wrong answers) | | | | | |\n", name, f.cycles,
                  f.failed_solves, f.wrong);
      return;
    }
    std::printf("| %s | %zu | %zu | %.1f | %.1f | %.1f | %.1f | %zu |\n", name, f.cycles, f.missed, f.cycle_p50_us,
                f.cycle_p999_us, f.cycle_max_us, f.solve_p50_us, f.wrong);
  };
  row("without swaps (baseline)", a, quiet_ok);
  const std::string with = "swap every " + std::to_string(s.swap_every_ms) + " ms";
  row(with.c_str(), b, b.cycles > 0 && b.failed_solves == 0);
  std::printf("\nmissed deadlines with swaps: %zu (goal 0: %s)\n", b.missed, b.missed == 0 ? "met" : "NOT met");
  if (quiet_ok) {
    const double added = b.cycle_max_us - a.cycle_max_us;
    std::printf("worst cycle: %.1f us with swaps vs %.1f us without: the swaps add %.1f us (goal <= 5 us: %s)\n",
                b.cycle_max_us, a.cycle_max_us, added, added <= 5 ? "met" : "NOT met");
  } else {
    std::printf("worst cycle: %.1f us with swaps; the baseline run FAILED, no difference given\n", b.cycle_max_us);
  }
  std::printf("swaps: %zu requested, %zu done, %zu refused%s%s\n", events.size(), done, refused,
              first_error.empty() ? "" : ": ", first_error.c_str());
  std::printf("swap latency from the request: to published median %.2f ms, max %.2f ms; to the new version's first "
              "solve median %.2f ms, max %.2f ms\n",
              median_of(to_publish), max_of(to_publish), median_of(to_first_solve), max_of(to_first_solve));
  std::printf("versions served: %s\n", served.ok() ? "only published ones, in order" : served.first_problem.c_str());
  bool heap_clean = true;
#if KILN_BENCH_SECCOMP
  if (forbidding != nullptr && !forbidden.problem.empty()) {
    std::printf("control thread not filtered: %s\n", forbidden.problem.c_str());
  } else if (forbidding != nullptr) {
    heap_clean = forbidden.during.allocations == 0 && forbidden.during.frees == 0;
    std::string allowed = "clock_nanosleep, clock_gettime";
    for (const std::string &call : s.allow_syscalls) allowed += ", " + call;
    std::printf("control thread under a seccomp filter of its own (%s only) in both runs: "
                "no other system call; heap allocations %llu, frees %llu%s\n",
                allowed.c_str(), static_cast<unsigned long long>(forbidden.during.allocations),
                static_cast<unsigned long long>(forbidden.during.frees),
                kiln::test::rt::heap_calls_counted() ? "" : " (not counted: a sanitizer's allocator)");
  }
#endif
  std::printf("memory after the swap run vs before it (after a warm-up swap to iiwa14-b and back; before that: RSS %zu "
              "kB): RSS %zu -> %zu kB (%+ld kB, of which the run's own cycle records are %zu kB); retirements pending %zu",
              rss_first, rss_before, rss_after, static_cast<long>(rss_after) - static_cast<long>(rss_before),
              swapping.cycles.capacity() * sizeof(sl::Cycle) / 1024, pending);
  if (device_before && device_after) {
    std::printf("; device memory in use %.2f -> %.2f MiB (%+.3f MiB; %.2f MiB before the warm-up)\n",
                static_cast<double>(*device_before) / 1048576.0, static_cast<double>(*device_after) / 1048576.0,
                (static_cast<double>(*device_after) - static_cast<double>(*device_before)) / 1048576.0,
                device_first ? static_cast<double>(*device_first) / 1048576.0 : -1.0);
  } else {
    std::printf("; device memory: %s\n", device >= 0 ? "cuMemGetInfo failed" : "no device (host path)");
  }
  std::printf("{\"bench\":\"swap\",\"gpu\":%s,\"call_median_ns\":%.3f,\"call_p999_ns\":%.3f,\"plain_median_ns\":%.3f,"
              "\"missed\":%zu,\"missed_baseline\":%zu,\"worst_us\":%.1f,\"worst_baseline_us\":%s,\"swaps\":%zu,"
              "\"swap_publish_median_ms\":%.3f,\"swap_publish_max_ms\":%.3f,\"swap_serve_median_ms\":%.3f,"
              "\"swap_serve_max_ms\":%.3f,\"rss_delta_kb\":%ld}\n",
              device >= 0 ? "true" : "false", swap_median, swap_p999, plain_median, b.missed, a.missed, b.cycle_max_us,
              quiet_ok ? us(a.cycle_max_us).c_str() : "null", done, median_of(to_publish), max_of(to_publish),
              median_of(to_first_solve), max_of(to_first_solve),
              static_cast<long>(rss_after) - static_cast<long>(rss_before));
  return served.ok() && b.wrong == 0 && b.failed_solves == 0 && heap_clean ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln_bench_swap: the control thread's cost of hot swap, and a 1 kHz IK loop with swaps"};
  Settings s;
  app.add_option("--seconds", s.seconds, "each run of the loop")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--swap-every-ms", s.swap_every_ms, "a swap every this many ms")->check(CLI::Range(1u, 600000u));
  app.add_option("--targets,--batch-targets", s.targets, "targets per cycle")->check(CLI::Range(1u, 65536u));
  app.add_option("--device", s.device, "CUDA ordinal, -1 the host path")->check(CLI::Range(-1, 1024));
  app.add_option("--keep-resident", s.keep_resident, "versions kept loaded")->check(CLI::Range(std::size_t{1}, std::size_t{16}));
  app.add_option("--rounds", s.rounds, "(a): timed rounds")->check(CLI::Range(1u, 100000000u));
  app.add_option("--batch", s.batch, "(a): calls per timed batch")->check(CLI::Range(1u, 1000000u));
  app.add_option("--cache", s.cache, "store to build into and load from (default: a temporary one, removed)");
  app.add_flag("!--no-fifo", s.fifo, "do not try SCHED_FIFO for the control thread");
#if KILN_BENCH_SECCOMP
  app.add_flag("--forbid-syscalls", s.forbid_syscalls,
               "(b)'s control thread under a seccomp filter allowing only clock_nanosleep and clock_gettime, its "
               "heap calls counted");
  app.add_option("--allow-syscalls", s.allow_syscalls,
                 "with --forbid-syscalls: system calls allowed beside clock_nanosleep and clock_gettime (e.g. futex: "
                 "what a device solve needs)")
      ->delimiter(',');
#endif
  CLI11_PARSE(app, argc, argv);
  return kiln_bench::run_reporting_errors("kiln_bench_swap", [&] { return run(s); });
}
