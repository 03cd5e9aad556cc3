#include "rt/control_loop.hpp"

#include <time.h>
#include <unistd.h>

#include <new>

#include <kiln/realtime.hpp>

#include "rt/syscall_filter.hpp"

namespace kiln::test::rt {

namespace {

std::int64_t now_ns() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void sleep_until(std::int64_t deadline_ns) noexcept {
  const timespec t{static_cast<time_t>(deadline_ns / 1'000'000'000), static_cast<long>(deadline_ns % 1'000'000'000)};
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) != 0) {
  }
}

// One cycle: the served version answers, and the answer names the version whose table served.
bool cycle(const Probed &probed, SwapReader &reader, std::uint64_t x) noexcept {
  const auto served = probed.acquire(reader);
  const std::uint64_t answer = served->call(served.instance, x);
  const bool right = answer == x * 1000 + served->version(served.instance);
  reader.quiescent();
  return right;
}

void *volatile probe_sink = nullptr;

}  // namespace

void control_loop(const Probed &probed, SwapReader reader, const LoopSettings &settings, LoopState &state) noexcept {
  reader.online();
  // Before the loop, what docs/hot-swap.md's checklist says, then the first-use effects (the
  // reader's thread id, lazily bound symbols, first-touch page faults) on warm-up cycles, all
  // before the filter.
  realtime::Report report;
  report.add(realtime::lock_memory());
  report.add(realtime::prefault_stack(128 * 1024));
  report.add(realtime::prefault_served(probed.resident()));
  if (settings.fifo_priority > 0) report.add(realtime::set_fifo(settings.fifo_priority));
  state.prepared = report.summary();
  std::int64_t deadline = now_ns();
  for (std::uint64_t x = 0; x < 200; ++x) {
    cycle(probed, reader, x);
    reader.offline();
    reader.online();
    deadline += settings.period_ns;
    sleep_until(deadline);
  }
  const std::string problem = filter_this_thread(kLoopSystemCalls);
  if (!problem.empty()) {
    state.failed = "the system-call filter could not be loaded: " + problem;
    state.done.store(true, std::memory_order_release);
    return;
  }
  const HeapCalls before = heap_calls();
  state.filtered.store(true, std::memory_order_release);

  std::uint64_t wrong = 0, turns = 0;
  bool probed_once = false;
  deadline = now_ns();
  for (std::uint64_t x = 1; !state.stop.load(std::memory_order_relaxed); ++x) {
    const std::int64_t woke = now_ns();
    if (!cycle(probed, reader, x)) ++wrong;
    if (x % 64 == 0) {  // as a loop that pauses: swaps stop waiting for it meanwhile
      reader.offline();
      reader.online();
      ++turns;
    }
    const int phase = state.phase.load(std::memory_order_relaxed);
    if (!probed_once && phase == LoopState::swapping && x % 16 == 0) {
      probed_once = true;
      if (settings.probe == Probe::syscall) (void)::getppid();
      if (settings.probe == Probe::allocation) {
        probe_sink = ::operator new(16);
        ::operator delete(probe_sink);
      }
    }
    const std::int64_t end = now_ns();
    Cycles &cycles = state.cycles[phase];
    ++cycles.count;
    if (end - deadline > cycles.worst_ns) cycles.worst_ns = end - deadline;
    if (woke - deadline > cycles.worst_wake_ns) cycles.worst_wake_ns = woke - deadline;
    deadline += settings.period_ns;
    if (end > deadline) {
      ++cycles.missed;
      while (deadline < end) deadline += settings.period_ns;  // skip the cycles it missed
    }
    sleep_until(deadline);
  }
  const HeapCalls after = heap_calls();
  state.heap = {after.allocations - before.allocations, after.frees - before.frees};
  state.wrong_answers = wrong;
  state.offline_turns = turns;
  reader.offline();
  state.done.store(true, std::memory_order_release);
  // Ending the thread makes system calls (its stack is released with madvise, then exit): it
  // parks instead, within the allowed calls, until the process exits.
  for (;;) sleep_until(now_ns() + 1'000'000'000);
}

}  // namespace kiln::test::rt
