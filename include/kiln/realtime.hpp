// kiln: preparing a control thread for real-time work, before its loop (docs/hot-swap.md,
// "Before the loop"). Each helper does one thing and reports whether it was done; none throws
// when the system does not permit it (no CAP_IPC_LOCK, an RLIMIT_MEMLOCK too small, no
// CAP_SYS_NICE, a CPU outside the thread's cgroup): a controller that can run without it decides.
//
//   kiln::realtime::Report report;
//   report.add(kiln::realtime::lock_memory());             // mlockall: no page faults to disk
//   report.add(kiln::realtime::prefault_stack(256 * 1024)); // this thread's next 256 KiB of stack
//   report.add(kiln::realtime::prefault_served(ik.resident()));  // the served tables' pages
//   report.add(kiln::realtime::pin_thread(3));             // the calling thread on CPU 3
//   report.add(kiln::realtime::set_fifo(80));              // SCHED_FIFO 80
//   log(report.summary());  // "mlockall: done; ... SCHED_FIFO 80: refused: Operation not permitted"
//
// Every function acts on the calling thread (memory locking on the whole process): call them on
// the control thread itself, before its first cycle.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <kiln/swap.hpp>

namespace kiln::realtime {

// What one helper did.
struct Step {
  std::string what;     // "mlockall(MCL_CURRENT | MCL_FUTURE)", "SCHED_FIFO 80", ...
  bool done = false;    // false: refused or not possible here
  std::string detail;   // done: what it did ("65536 bytes, 16 pages"); refused: why (strerror
                        // text and the usual fix)
  int error = 0;        // the errno of a refusal, else 0
};

// The steps of one preparation, in order.
struct Report {
  std::vector<Step> steps;
  const Step &add(Step step);
  bool all_done() const noexcept;
  // One line: "what: done (detail); what: refused: detail; ..."
  std::string summary() const;
};

// mlockall(MCL_CURRENT | MCL_FUTURE): every page mapped now and later (a version loaded by a swap
// included) stays resident, so a control thread never waits for a page to be read back. Done
// only when /proc/self/status then counts locked memory (the detail says how much): an
// interposed mlockall that answers success and locks nothing (a sanitizer's) is refused, ENOTSUP.
Step lock_memory();

// Touches `bytes` of the calling thread's stack below the current frame, one write per page, so
// the cycles that use that depth take no page fault (with lock_memory, those pages stay). Refused
// when `bytes` reaches past the thread's stack (its size from pthread_getattr_np), leaving a
// margin of 16 KiB.
Step prefault_stack(std::size_t bytes);

// Reads one byte of every page of [data, data + bytes).
Step prefault(const void *data, std::size_t bytes);

// The pages of each resident version's table and record (Swappable::resident()): a control thread
// reads them first thing after a swap or rollback to one of them.
Step prefault_served(const std::vector<ServedVersion> &resident);

// Runs the calling thread on `cpu` only (pthread_setaffinity_np). Refused for a CPU outside the
// thread's allowed set (its cgroup's cpuset), which the detail lists.
Step pin_thread(int cpu);

// SCHED_FIFO at `priority` (1..99) for the calling thread. Refused without CAP_SYS_NICE or an
// RLIMIT_RTPRIO high enough (the detail says which limit applied).
Step set_fifo(int priority);

// The CPUs the calling thread may run on, ascending.
std::vector<int> allowed_cpus();

}  // namespace kiln::realtime
