// kiln_test_rt_host: runs a control thread under a seccomp filter of its own (only the loop's
// clock_nanosleep and clock_gettime allowed) with its heap calls counted, while this thread swaps
// the version it serves over and over: swaps that load and unload, rollbacks, swaps back to a
// resident version, and refused swaps (failing self-test, failing shadow check, failing state
// import). The test "swap: the control thread makes no system call and no heap call ..." runs it
// (tests/unit/test_swap_realtime.cpp); run by hand it shows the cycle figures under SCHED_FIFO.
//
//   kiln_test_rt_host CACHE_DIR [--swaps N] [--period-us U] [--quiet-ms M] [--fifo PRIORITY]
//                     [--probe syscall|allocation]
//
// Exit 0: the control thread made no forbidden system call, no heap call and read no wrong
// answer, and every kind of swap happened. A forbidden call: the process dies of SIGSYS after
// naming it. Exit 77: the kernel refused the filter. Anything else: exit 1 with the reason.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include <kiln/errors.hpp>
#include <kiln/runtime.hpp>
#include <kiln/swap.hpp>

#include "rt/control_loop.hpp"
#include "rt/syscall_filter.hpp"

namespace {

using namespace kiln;
using namespace kiln::test::rt;

struct Tally {
  int swaps = 0, rollbacks = 0, to_resident = 0, refused_selftest = 0, refused_shadow = 0, refused_state = 0;
  int retired = 0, unloaded = 0;
  std::string unexpected;  // a refusal of the wrong step, or a good swap refused
};

void note(Tally &tally, const SwapReport &report) {
  for (const auto &retired : report.retired) {
    ++tally.retired;
    if (retired.unloaded) ++tally.unloaded;
  }
}

void swap_to(Probed &probed, Tally &tally, const std::string &name) {
  SwapRequest request;
  request.name = name;
  const SwapReport report = probed.swap(request);
  ++tally.swaps;
  if (report.was_resident) ++tally.to_resident;
  note(tally, report);
}

// A swap that must be refused at `step`; the serving version serves on.
void refused(Probed &probed, Tally &tally, const std::string &name, const std::string &step, int &count) {
  SwapRequest request;
  request.name = name;
  if (step == "shadow") {
    request.shadow = [](const ServedVersion &, const ServedVersion &) -> std::optional<std::string> {
      return std::string("answers differ on purpose");
    };
  }
  try {
    probed.swap(request);
    tally.unexpected = "a swap to " + name + " was not refused";
  } catch (const SwapError &error) {
    if (error.step() != step) tally.unexpected = "refused at " + error.step() + ", not " + step + ": " + error.what();
    ++count;
  }
}

// Stops when the control thread made a forbidden call: names it and dies of SIGSYS.
void check_filter() {
  const long call = forbidden_call();
  if (call < 0) return;
  std::printf("forbidden system call on the control thread: %s\n", system_call_name(call).c_str());
  std::fflush(stdout);
  die_of_sigsys();
}

void print_cycles(const char *what, const Cycles &c) {
  std::printf("cycles %s: %llu, missed deadlines %llu, worst cycle %.1f us (woke up at worst %.1f us late)\n", what,
              static_cast<unsigned long long>(c.count), static_cast<unsigned long long>(c.missed), static_cast<double>(c.worst_ns) / 1e3,
              static_cast<double>(c.worst_wake_ns) / 1e3);
}

[[noreturn]] void finish(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);  // the control thread stays parked under its filter; nothing to join
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CACHE_DIR [--swaps N] [--period-us U] [--quiet-ms M] [--fifo PRIORITY] "
                         "[--probe syscall|allocation]\n", argv[0]);
    return 2;
  }
  int swaps = 1000, quiet_ms = 300;
  LoopSettings settings;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--swaps") swaps = std::atoi(value.c_str());
    else if (flag == "--period-us") settings.period_ns = std::atoll(value.c_str()) * 1000;
    else if (flag == "--quiet-ms") quiet_ms = std::atoi(value.c_str());
    else if (flag == "--fifo") settings.fifo_priority = std::atoi(value.c_str());
    else if (flag == "--probe") settings.probe = value == "syscall" ? Probe::syscall : Probe::allocation;
    else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  install_violation_handler();
  try {
    RuntimeOptions options;
    options.cache_dir = argv[1];
    options.declared_device = "sm_90";
    Runtime runtime(options);
    const std::pair<const char *, const char *> files[] = {
        {"a", KILN_TEST_PLUGIN_SWAP_V1},
        {"b", KILN_TEST_PLUGIN_SWAP_V2},
        {"c", KILN_TEST_PLUGIN_SWAP_V3},
        {"selftest-fails", KILN_TEST_PLUGIN_SWAP_SELFTEST_FAILS},
        {"refuses-state", KILN_TEST_PLUGIN_SWAP_REFUSES_STATE}};
    for (const auto &[name, file] : files) {
      PublishRequest request;
      request.consumer = "swap";
      request.name = name;
      request.artifact_file = file;
      runtime.publish(request);
    }
    SwapOptions swap_options;
    swap_options.consumer = "swap";
    swap_options.name = "a";
    swap_options.interface_id = KILN_TEST_SWAP_INTERFACE_ID;
    swap_options.device = -1;  // the host path: every machine runs it
    swap_options.max_batch = 1;
    swap_options.keep_resident = 2;
    // Generous: a loaded machine may hold the control thread off its CPU for a while, and a swap
    // back to a version whose grace period has not passed is refused. A forbidden call is caught
    // by the watchdog below, not by a grace period running out.
    swap_options.grace_timeout = std::chrono::seconds(10);
    Probed probed(runtime, swap_options);

    // A control thread stopped by the filter holds every later grace period back: the watchdog
    // reports it at once, whatever this thread is waiting for.
    std::thread([] {
      for (;;) {
        check_filter();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }).detach();
    LoopState state;
    std::thread control(control_loop, std::cref(probed), probed.register_reader(), std::cref(settings), std::ref(state));
    control.detach();
    while (!state.filtered.load(std::memory_order_acquire) && !state.done.load(std::memory_order_acquire)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!state.failed.empty()) {
      std::printf("control thread: %s\n", state.failed.c_str());
      finish(77);  // the kernel's refusal, not kiln's fault: the test reports it as skipped
    }
    std::printf("control thread prepared: %s\n", state.prepared.c_str());
    // The filter is the control thread's alone (no TSYNC): this thread still makes the call the
    // syscall probe makes there, and lives.
    std::printf("control thread filtered: only clock_nanosleep, clock_gettime allowed, on that thread alone "
                "(the main thread's getppid answers %d)\n", static_cast<int>(::getppid()));
    state.phase = LoopState::quiet;
    std::this_thread::sleep_for(std::chrono::milliseconds(quiet_ms));
    check_filter();
    state.phase = LoopState::swapping;

    // Each round: a swap to the next of a, b, c (loads it, retires and unloads the oldest), a
    // rollback, a swap back to the resident version rolled back from, and one refusal.
    Tally tally;
    const char *names[] = {"a", "b", "c"};
    for (int round = 1; tally.swaps + tally.rollbacks < swaps && tally.unexpected.empty(); ++round) {
      const std::string next = names[round % 3], rolled_back_from = next;
      swap_to(probed, tally, next);
      note(tally, probed.rollback());
      ++tally.rollbacks;
      swap_to(probed, tally, rolled_back_from);
      switch (round % 3) {
        case 0: refused(probed, tally, "selftest-fails", "selftest", tally.refused_selftest); break;
        case 1: refused(probed, tally, "c", "shadow", tally.refused_shadow); break;
        default: refused(probed, tally, "refuses-state", "state", tally.refused_state); break;
      }
      check_filter();
    }
    state.stop = true;
    for (int waited = 0; !state.done.load(std::memory_order_acquire); ++waited) {
      check_filter();
      if (waited > 5000) {
        std::printf("the control thread did not stop within 5 s\n");
        finish(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    check_filter();

    print_cycles("without swaps", state.cycles[LoopState::quiet]);
    print_cycles("with swaps", state.cycles[LoopState::swapping]);
    std::printf("swaps %d (%d to a resident version), rollbacks %d; refused: self-test %d, shadow check %d, "
                "state import %d; retired %d, unloaded %d\n",
                tally.swaps, tally.to_resident, tally.rollbacks, tally.refused_selftest, tally.refused_shadow,
                tally.refused_state, tally.retired, tally.unloaded);
    std::printf("control thread: forbidden system calls 0, heap allocations %llu, frees %llu (%s), wrong answers "
                "%llu, offline/online turns %llu\n",
                static_cast<unsigned long long>(state.heap.allocations), static_cast<unsigned long long>(state.heap.frees),
                heap_calls_counted() ? "counted" : "not counted: a sanitizer's allocator",
                static_cast<unsigned long long>(state.wrong_answers), static_cast<unsigned long long>(state.offline_turns));
    if (!tally.unexpected.empty()) {
      std::printf("unexpected: %s\n", tally.unexpected.c_str());
      finish(1);
    }
    const bool every_kind = tally.rollbacks > 0 && tally.to_resident > 0 && tally.refused_selftest > 0 &&
                            tally.refused_shadow > 0 && tally.refused_state > 0 && tally.unloaded > 0;
    if (!every_kind) std::printf("not every kind of swap happened\n");
    const bool clean = state.heap.allocations == 0 && state.heap.frees == 0 && state.wrong_answers == 0;
    finish(clean && every_kind ? 0 : 1);
  } catch (const Error &error) {
    check_filter();  // a control thread stopped by the filter holds grace periods back: that is the news
    std::printf("kiln: %s\n", error.what());
    finish(1);
  }
}
