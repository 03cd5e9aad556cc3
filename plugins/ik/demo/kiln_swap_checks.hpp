// The swap side of the hot-swap run shared by kiln-swap-demo and kiln_bench_swap: the setup
// thread asking for swaps between recipe variants while kiln_swap_loop.hpp's control loop runs,
// and the analysis of what both recorded, after the run (figures, what was served against what
// the swaps published, the warm-start state across swaps).
//
// Not in common/, for the reason kiln_swap_loop.hpp gives.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/ext/ik.h>
#include <kiln/recipe.hpp>
#include <kiln/swap.hpp>

#include "kiln_swap_loop.hpp"

namespace kiln_ik::swap_loop {

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
