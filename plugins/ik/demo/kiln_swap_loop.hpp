// The hot-swap control loop shared by kiln-swap-demo (demo/kiln_swap_demo.cpp) and
// kiln_bench_swap (bench/swap_bench.cpp): a periodic control thread solving IK for smoothly moving
// targets through kiln::Swappable<kiln_ik_v1>, a setup thread asking for swaps between recipe
// variants, and what both recorded, analysed after the run.
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
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kiln/errors.hpp>
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

// SCHED_FIFO for the calling thread where permitted; what it runs under, in words.
inline std::string try_realtime(bool wanted, int priority = 80) {
  if (!wanted) return "SCHED_OTHER (SCHED_FIFO not asked for)";
  sched_param param{};
  param.sched_priority = priority;
  const int error = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
  if (error == 0) return "SCHED_FIFO priority " + std::to_string(priority);
  return std::string("SCHED_OTHER (SCHED_FIFO not permitted: ") + std::strerror(error) + ")";
}

// Resident set of this process, kB (/proc/self/status VmRSS).
inline std::size_t rss_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

// Pose error between two kiln.ik/1 poses (x y z qw qx qy qz): metres and radians.
inline void pose_error(const float *target, const float *pose, double &position_error, double &orientation_error) {
  const double dx = double{target[0]} - pose[0], dy = double{target[1]} - pose[1], dz = double{target[2]} - pose[2];
  position_error = std::sqrt(dx * dx + dy * dy + dz * dz);
  double a[4], b[4];
  double na = 0, nb = 0;
  for (int k = 0; k < 4; ++k) {
    a[k] = target[3 + k], b[k] = pose[3 + k];
    na += a[k] * a[k], nb += b[k] * b[k];
  }
  na = std::sqrt(na), nb = std::sqrt(nb);
  for (int k = 0; k < 4; ++k) a[k] /= na, b[k] /= nb;
  const double w = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
  const double x = -a[0] * b[1] + a[1] * b[0] - a[2] * b[3] + a[3] * b[2];
  const double y = -a[0] * b[2] + a[1] * b[3] + a[2] * b[0] - a[3] * b[1];
  const double z = -a[0] * b[3] - a[1] * b[2] + a[2] * b[1] + a[3] * b[0];
  orientation_error = 2.0 * std::atan2(std::sqrt(x * x + y * y + z * z), std::fabs(w));
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
        pose_error(batch.targets.data() + i * KILN_IK_POSE_SIZE, poses.data() + i * KILN_IK_POSE_SIZE, pe, oe);
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
  reader.offline();
  run.end_ns = now_ns();
  cycles.resize(n);
  run.cycles = std::move(cycles);
}

// ---- the setup thread: swap requests ----

struct Variant {
  std::string label;  // "iiwa14", "iiwa14-b", "iiwa14-broken"
  kiln::Recipe recipe;
  bool broken = false;  // expected to be refused at "selftest"
};

struct SwapEvent {
  std::size_t variant = 0;
  std::int64_t request_ns = 0, return_ns = 0;
  bool ok = false;       // the swap happened (or the version was already serving)
  bool swapped = false;
  bool was_resident = false;
  std::uint64_t serial = 0;  // serving after it
  std::string to_key, built_key;  // what serves now / what the recipe built (from the build step)
  std::string step, error;        // refused: the step and the message
  double total_ms = 0, build_ms = 0;
  std::string build_detail;
  std::size_t state_bytes = 0, retired = 0, unloaded = 0, retire_pending = 0;
  std::int64_t served_ns = -1;  // first cycle start the new version solved (-1: none seen)
};

struct SwapPlan {
  std::uint32_t every_ms = 100;
  std::uint32_t broken_every = 0;  // every Nth request asks for the broken variant; 0: never
  std::size_t first_good = 1;      // the first good variant asked for; then they alternate
};

inline SwapEvent swap_once(Ik &ik, const std::vector<Variant> &variants, std::size_t which) {
  SwapEvent e;
  e.variant = which;
  kiln::SwapRequest request;
  request.recipe = variants[which].recipe;
  e.request_ns = now_ns();
  auto fill = [&e](const kiln::SwapReport &report) {
    e.swapped = report.swapped;
    e.was_resident = report.was_resident;
    e.to_key = report.to_key;
    e.total_ms = report.total_ms;
    e.state_bytes = report.state_bytes;
    e.retired = report.retired.size();
    for (const auto &r : report.retired) e.unloaded += r.unloaded ? 1 : 0;
    e.retire_pending = report.retire_pending;
    for (const auto &step : report.steps) {
      if (step.step == "build") {
        e.build_ms = step.ms;
        e.build_detail = step.detail;
        const auto space = step.detail.rfind(' ');
        e.built_key = space == std::string::npos ? step.detail : step.detail.substr(space + 1);
      }
    }
  };
  try {
    const kiln::SwapReport report = ik.swap(request);
    e.return_ns = now_ns();
    e.ok = true;
    e.serial = report.serial;
    fill(report);
  } catch (const kiln::SwapError &error) {
    e.return_ns = now_ns();
    e.step = error.step();
    e.error = error.what();
    fill(error.report());
  }
  return e;
}

// Asks for a swap every plan.every_ms until `until_ns`: the good variants (those not broken)
// alternate, every broken_every-th request is the first broken one. Request times a long swap
// (a build on miss) overran are skipped.
inline void swap_requests(Ik &ik, const std::vector<Variant> &variants, const SwapPlan &plan, std::int64_t start_ns,
                          std::int64_t until_ns, std::vector<SwapEvent> &events) {
  std::vector<std::size_t> good, bad;
  for (std::size_t i = 0; i < variants.size(); ++i) (variants[i].broken ? bad : good).push_back(i);
  std::size_t next_good = plan.first_good % good.size();
  std::int64_t at = start_ns;
  for (std::uint64_t k = 1;; ++k) {
    at += std::int64_t{plan.every_ms} * 1000000;
    if (at >= until_ns) break;
    sleep_until_ns(at);
    std::size_t which;
    if (plan.broken_every > 0 && !bad.empty() && k % plan.broken_every == 0) {
      which = bad.front();
    } else {
      which = good[next_good];
      next_good = (next_good + 1) % good.size();
    }
    events.push_back(swap_once(ik, variants, which));
    // A swap that built on miss (seconds of nvcc) ate request times: skip them rather than fire
    // a burst of back-to-back swaps to catch up.
    const std::int64_t now = now_ns();
    if (now >= until_ns) break;
    while (at + std::int64_t{plan.every_ms} * 1000000 < now) at += std::int64_t{plan.every_ms} * 1000000;
  }
}

// ---- analysis ----

inline double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

struct Figures {
  std::size_t cycles = 0;
  std::size_t missed = 0;  // cycles that ended past their deadline + periods skipped
  double cycle_p50_us = 0, cycle_p99_us = 0, cycle_p999_us = 0, cycle_max_us = 0;
  double solve_p50_us = 0, solve_p99_us = 0, solve_max_us = 0;
  double wake_p50_us = 0, wake_max_us = 0;
  std::size_t answers = 0, wrong = 0, unconverged = 0, failed_solves = 0;
  double mean_iterations = 0;  // per target
};

inline Figures figures(const LoopRun &run, std::uint32_t period_us, std::uint32_t batch) {
  Figures f;
  f.cycles = run.cycles.size();
  std::vector<double> cycle, solve, wake;
  double iterations = 0;
  for (const Cycle &c : run.cycles) {
    cycle.push_back(c.cycle_ns / 1e3);
    solve.push_back(c.solve_ns / 1e3);
    wake.push_back(c.wake_ns / 1e3);
    f.missed += (c.cycle_ns > std::uint64_t{period_us} * 1000 ? 1 : 0) + c.skipped;
    f.wrong += c.wrong;
    f.unconverged += c.unconverged;
    f.failed_solves += c.status != KILN_OK ? 1 : 0;
    f.answers += c.status == KILN_OK ? batch : 0;
    iterations += c.iterations;
  }
  f.cycle_p50_us = percentile(cycle, 0.5);
  f.cycle_p99_us = percentile(cycle, 0.99);
  f.cycle_p999_us = percentile(cycle, 0.999);
  f.cycle_max_us = cycle.empty() ? 0 : *std::max_element(cycle.begin(), cycle.end());
  f.solve_p50_us = percentile(solve, 0.5);
  f.solve_p99_us = percentile(solve, 0.99);
  f.solve_max_us = solve.empty() ? 0 : *std::max_element(solve.begin(), solve.end());
  f.wake_p50_us = percentile(wake, 0.5);
  f.wake_max_us = wake.empty() ? 0 : *std::max_element(wake.begin(), wake.end());
  f.mean_iterations = f.answers > 0 ? iterations / static_cast<double>(f.answers) : 0;
  return f;
}

// What was served, checked against what the swaps published.
struct ServedCheck {
  std::size_t unknown_cycles = 0;  // solved by a serial no swap published (a refused version, garbage)
  std::size_t out_of_order = 0;    // the served serials did not follow the order they were published in
  std::size_t wrong_key = 0;       // a swap to a recipe served another content key than it built
  std::size_t broken_served = 0;   // a broken variant's request that was not refused
  std::size_t refused_elsewhere = 0;  // a broken variant refused at another step than "selftest"
  std::size_t good_refused = 0;    // a good variant refused
  std::string first_problem;
  bool ok() const {
    return unknown_cycles == 0 && out_of_order == 0 && wrong_key == 0 && broken_served == 0 && refused_elsewhere == 0 &&
           good_refused == 0;
  }
};

inline ServedCheck check_served(const LoopRun &run, std::vector<SwapEvent> &events,
                                const std::vector<Variant> &variants, std::uint64_t initial_serial) {
  ServedCheck check;
  auto note = [&check](const std::string &what) {
    if (check.first_problem.empty()) check.first_problem = what;
  };
  std::vector<std::uint64_t> order{initial_serial};  // serials in the order they were published
  std::map<std::size_t, std::string> key_of;         // variant -> the key its recipe built
  for (const SwapEvent &e : events) {
    const Variant &v = variants[e.variant];
    if (v.broken) {
      if (e.ok) {
        ++check.broken_served;
        note("the broken variant " + v.label + " was not refused (serial " + std::to_string(e.serial) + ")");
      } else if (e.step != "selftest") {
        ++check.refused_elsewhere;
        note(v.label + " refused at step " + e.step + ", not selftest: " + e.error);
      }
    } else if (!e.ok) {
      ++check.good_refused;
      note(v.label + " refused at step " + e.step + ": " + e.error);
    }
    if (!e.built_key.empty()) {
      auto [it, fresh] = key_of.emplace(e.variant, e.built_key);
      if (!fresh && it->second != e.built_key) {
        ++check.wrong_key;
        note(v.label + " built " + e.built_key + " after " + it->second);
      }
    }
    if (e.ok && !e.built_key.empty() && e.to_key != e.built_key) {
      ++check.wrong_key;
      note(v.label + " built " + e.built_key + " but " + e.to_key + " serves");
    }
    if (e.ok && e.swapped) order.push_back(e.serial);
  }
  // The serials served must walk the published order: each change moves to a later entry.
  std::size_t at = 0;
  std::uint32_t last = 0;
  for (const Cycle &c : run.cycles) {
    if (c.serial == last) continue;
    last = c.serial;
    if (std::find(order.begin(), order.end(), c.serial) == order.end()) {
      ++check.unknown_cycles;
      note("a cycle was solved by serial " + std::to_string(c.serial) + ", which no swap published");
      continue;
    }
    std::size_t found = at;
    while (found < order.size() && order[found] != c.serial) ++found;
    if (found == order.size()) {
      ++check.out_of_order;
      note("serial " + std::to_string(c.serial) + " served again after a later one");
    } else {
      at = found;
    }
  }
  // When each swapped-in version first solved.
  for (SwapEvent &e : events) {
    if (!e.ok || !e.swapped) continue;
    for (const Cycle &c : run.cycles) {
      if (c.start_ns + std::int64_t{c.cycle_ns} >= e.request_ns && c.serial == e.serial) {
        e.served_ns = c.start_ns + c.wake_ns;
        break;
      }
    }
  }
  return check;
}

// The warm-start state across swaps: the iterations of the first cycle a new version solved,
// against the next `window` cycles of the same version (its own warm level: the variants converge
// at different rates) and the loop's first cycle (cold: nothing solved yet, all slots empty). A
// swap "jumped" when its first cycle is closer to a cold start than to that warm level, by more
// than one iteration per target. The same test applied to every ordinary cycle (no swap before it)
// gives the rate at which it fires by chance.
struct StateCheck {
  std::size_t swaps = 0, jumped = 0;
  double before = 0, after = 0, after_max = 0, steady = 0, cold = 0;  // iterations per target
  std::size_t ordinary = 0, ordinary_jumped = 0;
  double chance() const { return ordinary > 0 ? static_cast<double>(ordinary_jumped) / static_cast<double>(ordinary) : 0; }
};

inline StateCheck check_state(const LoopRun &run, std::uint32_t batch, std::size_t window = 10) {
  StateCheck s;
  const auto &c = run.cycles;
  if (c.size() < 2 * window + 2 || batch == 0) return s;
  s.cold = static_cast<double>(c.front().iterations) / batch;
  double before_sum = 0, after_sum = 0, steady_sum = 0;
  for (std::size_t i = window + 1; i + window < c.size(); ++i) {
    const bool swapped = c[i].serial != c[i - 1].serial;
    bool same = true;  // the next `window` cycles are this version's
    for (std::size_t k = i + 1; k <= i + window; ++k) same = same && c[k].serial == c[i].serial;
    if (!same) continue;
    double steady = 0, before = 0;
    for (std::size_t k = i + 1; k <= i + window; ++k) steady += c[k].iterations;
    for (std::size_t k = i - window; k < i; ++k) before += c[k].iterations;
    steady /= static_cast<double>(window * batch);
    before /= static_cast<double>(window * batch);
    const double first = static_cast<double>(c[i].iterations) / batch;
    const bool jumped = first > steady + 1.0 && first > (steady + s.cold) / 2;
    if (swapped) {
      ++s.swaps;
      s.jumped += jumped ? 1 : 0;
      before_sum += before;
      after_sum += first;
      steady_sum += steady;
      s.after_max = std::max(s.after_max, first);
    } else {
      ++s.ordinary;
      s.ordinary_jumped += jumped ? 1 : 0;
    }
  }
  if (s.swaps > 0) {
    s.before = before_sum / static_cast<double>(s.swaps);
    s.after = after_sum / static_cast<double>(s.swaps);
    s.steady = steady_sum / static_cast<double>(s.swaps);
  }
  return s;
}

}  // namespace kiln_ik::swap_loop
