// kiln_bench_swap --forbid-syscalls: the control loop's thread under the system-call filter of
// tests/hosts/rt (only clock_nanosleep and clock_gettime, on that thread alone), its heap calls
// counted by the malloc family this binary then defines (tests/hosts/rt/count_allocations.cpp).
// The proof is the unit test "swap: the control thread makes no system call and no heap call";
// this runs the same check around the IK plugin's real solve, as context for the figures.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "rt/count_allocations.hpp"
#include "rt/syscall_filter.hpp"

namespace kiln_bench {

struct ForbiddenCalls {
  // Allowed beside the loop's own (kLoopSystemCalls): --allow-syscalls, to find out what a device
  // solve needs once the first forbidden call is known.
  std::vector<std::string> also_allowed;
  std::string problem;  // the filter could not be loaded (the kernel refused it)
  kiln::test::rt::HeapCalls during;  // summed over the filtered runs
  kiln::test::rt::HeapCalls before;
  bool filtered = false;

  // LoopConfig::loop_starts and loop_ends, on the control thread.
  void starts() {
    std::vector<std::string> allowed = kiln::test::rt::kLoopSystemCalls;
    allowed.insert(allowed.end(), also_allowed.begin(), also_allowed.end());
    problem = kiln::test::rt::filter_this_thread(allowed);
    filtered = problem.empty();
    before = kiln::test::rt::heap_calls();
  }
  void ends() noexcept {
    const kiln::test::rt::HeapCalls now = kiln::test::rt::heap_calls();
    if (!filtered) return;
    during.allocations += now.allocations - before.allocations;
    during.frees += now.frees - before.frees;
  }
};

// A forbidden call stops the control thread for good: name it and die of SIGSYS.
inline void watch_forbidden_calls() {
  kiln::test::rt::install_violation_handler();
  std::thread([] {
    for (;;) {
      const long call = kiln::test::rt::forbidden_call();
      if (call >= 0) {
        std::printf("kiln_bench_swap: forbidden system call on the control thread: %s\n",
                    kiln::test::rt::system_call_name(call).c_str());
        std::fflush(stdout);
        kiln::test::rt::die_of_sigsys();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }).detach();
}

// Runs `body` on a new thread and waits for it. A filtered thread cannot end (ending makes
// system calls): it parks in the allowed clock_nanosleep until the process exits.
template <class Body>
void run_control_thread(const ForbiddenCalls *forbidding, Body body) {
  if (forbidding == nullptr) {
    std::thread(body).join();
    return;
  }
  std::atomic<bool> finished{false};
  std::thread control([&finished, forbidding, body] {
    body();
    const bool park = forbidding->filtered;
    finished.store(true, std::memory_order_release);
    if (!park) return;
    for (;;) {
      timespec nap{1, 0};
      ::clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, nullptr);
    }
  });
  while (!finished.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (forbidding->filtered) {
    control.detach();
  } else {
    control.join();
  }
}

}  // namespace kiln_bench
