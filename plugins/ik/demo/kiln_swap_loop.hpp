// The hot-swap control loop shared by kiln-swap-demo (demo/kiln_swap_demo.cpp) and
// kiln_bench_swap (bench/swap_bench.cpp): a periodic control thread solving IK for smoothly moving
// targets through kiln::Swappable<kiln_ik_v1>, and what it recorded per cycle. The setup thread's
// swap requests and the checks of the run are kiln_swap_checks.hpp.
//
// Not in common/: the recipes hash common/ into every plugin's build identity, and this is host
// code of the demo and the bench only.
//
// Control thread, every cycle (no allocation, no lock, no system call but the sleep):
//   clock_nanosleep(TIMER_ABSTIME) to the cycle's start -> the targets of this cycle (the served
//   version's fk of joint trajectories) -> acquire -> solve (KILN_IK_SOLVE_WARM_START: seed 0 from
//   the slot's last solution, the state a swap carries) -> every answer re-judged with fk ->
//   quiescent -> one record into storage reserved (and touched) before the loop.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/recipe.hpp>
#include <kiln/swap.hpp>

#include "kiln_ik_batch.hpp"

namespace kiln_ik::swap_loop {

using Ik = kiln::Swappable<kiln_ik_v1>;

inline std::int64_t now_ns() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

inline timespec to_timespec(std::int64_t ns) noexcept {
  timespec t{};
  t.tv_sec = static_cast<time_t>(ns / 1000000000);
  t.tv_nsec = static_cast<long>(ns % 1000000000);
  return t;
}

inline void sleep_until_ns(std::int64_t ns) noexcept {
  const timespec t = to_timespec(ns);
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR) {
  }
}

// SCHED_FIFO for the calling thread where permitted; what it runs under, in words. Under
// SCHED_OTHER the thread's timer slack (50 us by default, which the kernel may add to every
// timed wake-up) is set to 1 ns; SCHED_FIFO threads have none.
inline std::string try_realtime(bool wanted, int priority = 80) {
  const auto other = [](const std::string &why) {
    const bool slack = ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0;
    return "SCHED_OTHER (" + why + (slack ? "; timer slack 1 ns)" : "; timer slack left at its default)");
  };
  if (!wanted) return other("SCHED_FIFO not asked for");
  sched_param param{};
  param.sched_priority = priority;
  const int error = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
  if (error == 0) return "SCHED_FIFO priority " + std::to_string(priority);
  return other(std::string("SCHED_FIFO not permitted: ") + std::strerror(error));
}

// Resident set of this process, kB (/proc/self/status VmRSS).
inline std::size_t rss_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}


// An answer is right when the plugin's fk (double, rounded to float) of the returned q is within
// the solver's default tolerances plus the self-test's slack (1e-5 m / 1e-4 rad) and q is inside
// the limits. An answer reported as converged that is not right is wrong (a lying solver: what
// the broken variant does); one reported as not converged is only counted.
constexpr double kPositionAllowed = KILN_IK_DEFAULT_POSITION_TOLERANCE + 1e-5;
constexpr double kOrientationAllowed = KILN_IK_DEFAULT_ORIENTATION_TOLERANCE + 1e-4;

// Joint trajectories inside the limits: slot s at cycle t moves a few mrad per cycle.
struct Trajectory {
  std::vector<double> lower, upper, middle, amplitude;

  Trajectory() = default;
  Trajectory(const kiln_ik_v1 &ik, const kiln_instance *instance) {
    const std::uint32_t dof = ik.dof(instance);
    for (std::uint32_t j = 0; j < dof; ++j) {
      kiln_ik_joint_info joint{};
      joint.struct_size = sizeof joint;
      if (ik.joint_info(instance, j, &joint) != KILN_OK) throw std::runtime_error("kiln.ik/1 joint_info failed");
      lower.push_back(joint.lower);
      upper.push_back(joint.upper);
      middle.push_back((joint.lower + joint.upper) / 2);
      amplitude.push_back(std::min(0.5, (joint.upper - joint.lower) / 4));
    }
  }
  std::size_t dof() const { return middle.size(); }
  void at(std::uint32_t slot, std::uint64_t cycle, float *q) const noexcept {
    for (std::size_t j = 0; j < middle.size(); ++j) {
      const double phase = 0.004 * static_cast<double>(cycle) * (1.0 + 0.3 * static_cast<double>(j)) + 0.9 * slot +
                           0.5 * static_cast<double>(j);
      q[j] = static_cast<float>(middle[j] + amplitude[j] * std::sin(phase));
    }
  }
};

// How the demo and the bench serve the IK variants: as the first variant's consumer/name, on
// `device` with room for `targets` per solve.
inline kiln::SwapOptions ik_swap_options(const kiln::Recipe &first, int device, std::uint32_t targets,
                                         std::size_t keep_resident) {
  kiln::SwapOptions options;
  options.consumer = first.consumer;
  options.name = first.name;
  options.interface_id = KILN_IK_INTERFACE_ID;
  options.device = device;
  options.max_batch = targets;
  options.keep_resident = keep_resident;
  return options;
}

// What serves before the first swap: the joint trajectory it is driven along and its serial.
// The reader is left offline until the loop starts.
struct FirstServed {
  Trajectory path;
  std::uint64_t serial = 0;
};
inline FirstServed first_served(const Ik &ik, kiln::SwapReader &reader) {
  const auto served = ik.acquire(reader);
  FirstServed first{Trajectory(*served.table, served.instance), served.serial};
  reader.quiescent();
  reader.offline();
  return first;
}

// One cycle as the control thread recorded it.
struct Cycle {
  std::int64_t start_ns = 0;     // its scheduled start (CLOCK_MONOTONIC)
  std::uint32_t wake_ns = 0;     // scheduled start -> woke up
  std::uint32_t solve_ns = 0;    // acquire -> solve returned
  std::uint32_t cycle_ns = 0;    // scheduled start -> solved, checked, quiescent
  std::uint32_t serial = 0;      // of the version that solved it
  std::uint32_t iterations = 0;  // summed over the batch
  std::uint16_t wrong = 0;       // answers reported converged that fk says are not right
  std::uint16_t unconverged = 0;
  std::int32_t status = 0;       // of the solve (KILN_OK = 0)
  std::uint32_t skipped = 0;     // whole periods skipped before this cycle (overrun)
};

struct LoopConfig {
  double seconds = 5;
  std::uint32_t period_us = 1000;
  std::uint32_t batch = 8;
  bool realtime = true;  // try SCHED_FIFO
  std::uint64_t first_cycle = 0;  // trajectory phase to start from (a second run continues the first)
  // On the control thread, right before its first cycle (scheduling set, reader online) and right
  // after its last: kiln_bench_swap --forbid-syscalls loads its system-call filter and reads the
  // thread's heap count there.
  std::function<void()> loop_starts, loop_ends;
};

struct LoopRun {
  std::vector<Cycle> cycles;   // reserved and touched before the loop; size() = cycles run
  std::string scheduling;
  std::int64_t start_ns = 0, end_ns = 0;
  std::string error;           // a solve failed: the first message
};

// The control loop, on the calling thread. `reader` is the calling thread's (moved to it); it
// is online during the loop and offline after it.
inline void control_loop(const Ik &ik, kiln::SwapReader &reader, const LoopConfig &config, const Trajectory &path,
                         LoopRun &run) {
  const std::size_t dof = path.dof();
  const std::size_t total = static_cast<std::size_t>(config.seconds * 1e6 / config.period_us);
  std::vector<Cycle> cycles(total);  // touched: no page fault on the first write in the loop
  HostBatch batch(config.batch, dof);
  std::vector<float> truth(config.batch * dof), poses(std::size_t{config.batch} * KILN_IK_POSE_SIZE);
  kiln_ik_options options{};
  options.struct_size = sizeof options;
  options.flags = KILN_IK_SOLVE_WARM_START;
  batch.problem.options = &options;
  char message[512] = "";
  run.error.reserve(sizeof message);  // assigning a failed solve's message allocates nothing
  run.scheduling = try_realtime(config.realtime);

  const std::int64_t period = std::int64_t{config.period_us} * 1000;
  reader.online();
  run.start_ns = now_ns() + period;
  std::int64_t next = run.start_ns;
  std::size_t n = 0;
  std::uint32_t skipped = 0;
  if (config.loop_starts) config.loop_starts();
  for (; n < total; ++n) {
    sleep_until_ns(next);
    const std::int64_t woke = now_ns();
    Cycle &c = cycles[n];
    const std::uint64_t t = config.first_cycle + n;
    for (std::uint32_t s = 0; s < config.batch; ++s) path.at(s, t, truth.data() + s * dof);

    const auto served = ik.acquire(reader);
    served->fk(served.instance, truth.data(), config.batch, batch.targets.data());
    const std::int64_t solve_start = now_ns();
    const kiln_status status = served->solve(served.instance, &batch.problem, &batch.result, message, sizeof message);
    const std::int64_t solved = now_ns();
    std::uint16_t wrong = 0, unconverged = 0;
    std::uint32_t iterations = 0;
    if (status == KILN_OK) {
      served->fk(served.instance, batch.q.data(), config.batch, poses.data());
      for (std::uint32_t i = 0; i < config.batch; ++i) {
        double pe = 0, oe = 0;
        kiln_ik::pose_error(batch.targets.data() + i * KILN_IK_POSE_SIZE, poses.data() + i * KILN_IK_POSE_SIZE, pe, oe);
        bool inside = true;
        for (std::size_t j = 0; j < dof; ++j) {
          const double v = batch.q[i * dof + j];
          inside = inside && v >= path.lower[j] && v <= path.upper[j];
        }
        const bool right = inside && pe <= kPositionAllowed && oe <= kOrientationAllowed;
        if (batch.converged[i] == 0) {
          ++unconverged;
          if (!inside) ++wrong;
        } else if (!right) {
          ++wrong;
        }
        iterations += batch.iterations[i];
      }
    } else if (run.error.empty()) {
      run.error = message;  // once: the string's buffer was reserved before the loop
    }
    c.serial = static_cast<std::uint32_t>(served.serial);
    reader.quiescent();  // nothing acquired is held any more

    const std::int64_t done = now_ns();
    c.start_ns = next;
    c.wake_ns = static_cast<std::uint32_t>(woke - next);
    c.solve_ns = static_cast<std::uint32_t>(solved - solve_start);
    c.cycle_ns = static_cast<std::uint32_t>(std::min<std::int64_t>(done - next, UINT32_MAX));
    c.iterations = iterations;
    c.wrong = wrong;
    c.unconverged = unconverged;
    c.status = status;
    c.skipped = skipped;
    skipped = 0;
    next += period;
    while (done > next) {  // overran: the periods it ate are missed, start at the next one
      next += period;
      ++skipped;
    }
  }
  if (config.loop_ends) config.loop_ends();
  reader.offline();
  run.end_ns = now_ns();
  cycles.resize(n);
  run.cycles = std::move(cycles);
}

}  // namespace kiln_ik::swap_loop
