// The control thread of kiln_test_rt_host: a periodic loop over a Swappable of the swap probe,
// prepared (kiln::realtime), warmed, then filtered to the loop's own system calls and counted for
// heap calls, while the main thread swaps.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <kiln/swap.hpp>

#include "plugins/swap_probe.h"
#include "rt/count_allocations.hpp"

namespace kiln::test::rt {

// Cycle figures of one phase (context, not a verdict).
struct Cycles {
  std::uint64_t count = 0;
  std::uint64_t missed = 0;      // ended after the next cycle's deadline
  std::int64_t worst_ns = 0;     // deadline to the end of the cycle's work
  std::int64_t worst_wake_ns = 0;  // deadline to waking up
};

enum class Probe { none, syscall, allocation };  // a deliberate fault on the control thread

struct LoopSettings {
  std::int64_t period_ns = 500'000;
  int fifo_priority = 0;  // 0: the default scheduling
  Probe probe = Probe::none;
};

// Shared between the control thread and the main thread.
struct LoopState {
  enum Phase { warming = 0, quiet = 1, swapping = 2 };
  std::atomic<int> phase{warming};
  std::atomic<bool> filtered{false};  // set once the filter is loaded and counting started
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};      // the figures below are final
  std::string failed;                 // set before `done` when the thread could not start its loop
  std::string prepared;               // kiln::realtime's report
  Cycles cycles[3];
  HeapCalls heap;                     // during the filtered loop
  std::uint64_t wrong_answers = 0;    // an answer naming another version than the served table's
  std::uint64_t offline_turns = 0;    // offline() + online() pairs in the filtered loop
};

using Probed = Swappable<kiln_test_swap_v1>;

// The thread's body: `reader` is registered for it.
void control_loop(const Probed &probed, SwapReader reader, const LoopSettings &settings, LoopState &state) noexcept;

}  // namespace kiln::test::rt
