#include "rnea_bench_cpu.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "kiln_rnea_chain.cuh"  // <build>/bench/iiwa14/
#include "bench_stats.hpp"

namespace kiln_bench_rnea {

namespace {

using Chain = kiln_rnea::Chain;
constexpr int kDof = Chain::kDof;
constexpr std::size_t kChunk = 1 << 16;  // states per generator (make_states), per hand-out (time_cpu: 4096)

using kiln_bench::median;

template <class T>
Accuracy compare_any(const std::vector<T> &gpu, std::size_t stride, const std::vector<double> &cpu, std::size_t count) {
  Accuracy a;
  a.compared = count;
  for (std::size_t i = 0; i < count; ++i) {
    double largest = 0, worst = 0;
    for (int j = 0; j < kDof; ++j) {
      const double reference = cpu[i * kDof + static_cast<std::size_t>(j)];
      const double difference = std::fabs(static_cast<double>(gpu[static_cast<std::size_t>(j) * stride + i]) - reference);
      if (!std::isfinite(difference)) a.finite = false;
      largest = std::max(largest, std::fabs(reference));
      worst = std::max(worst, difference);
    }
    a.max_abs = std::max(a.max_abs, worst);
    a.worst_relative = std::max(a.worst_relative, worst / std::max(1.0, largest));
    a.torque_scale = std::max(a.torque_scale, largest);
  }
  return a;
}

}  // namespace

int dof() { return kDof; }
const char *robot() { return Chain::kRobot; }

void make_states(std::size_t count, uint64_t seed, ThreadPool &pool, States<double> &exact, States<float> &single) {
  for (auto *s : {&exact.q, &exact.qd, &exact.qdd}) s->assign(count * kDof, 0.0);
  for (auto *s : {&single.q, &single.qd, &single.qdd}) s->assign(count * kDof, 0.0f);
  exact.stride = single.stride = count;
  const std::size_t chunks = (count + kChunk - 1) / kChunk;
  for_each_chunk(pool, chunks, 1, [&](unsigned, std::size_t chunk, std::size_t) {
    std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ull * (chunk + 1)));
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    const auto put = [&](std::vector<double> &to, std::vector<float> &to_single, std::size_t at, double value) {
      to_single[at] = static_cast<float>(value);
      to[at] = static_cast<double>(to_single[at]);
    };
    for (std::size_t i = chunk * kChunk; i < std::min(count, (chunk + 1) * kChunk); ++i) {
      for (int j = 0; j < kDof; ++j) {
        const std::size_t at = static_cast<std::size_t>(j) * count + i;
        const double mid = 0.5 * (Chain::kLower[j] + Chain::kUpper[j]);
        const double half = 0.5 * (Chain::kUpper[j] - Chain::kLower[j]);
        const double velocity = Chain::kVelocityLimit[j] > 0 ? Chain::kVelocityLimit[j] : 2.0;
        put(exact.q, single.q, at, mid + half * unit(rng));
        put(exact.qd, single.qd, at, velocity * unit(rng));
        put(exact.qdd, single.qdd, at, (Chain::kJointTypes[j] == Chain::kPrismatic ? 2.0 : 10.0) * unit(rng));
      }
    }
  });
}

CpuTiming time_cpu(const States<double> &states, std::size_t count, int passes, ThreadPool *pool,
                   std::vector<double> &tau) {
  CpuTiming timing;
  timing.threads = pool != nullptr ? pool->size() : 1;
  timing.count = count;
  // State-major (q, qd, qdd of a state side by side): the CPU's natural layout.
  constexpr std::size_t kRow = 3 * kDof;
  std::vector<double> rows(count * kRow);
  for (std::size_t i = 0; i < count; ++i) {
    for (int j = 0; j < kDof; ++j) {
      const std::size_t from = static_cast<std::size_t>(j) * states.stride + i, to = i * kRow + static_cast<std::size_t>(j);
      rows[to] = states.q[from], rows[to + kDof] = states.qd[from], rows[to + 2 * kDof] = states.qdd[from];
    }
  }
  tau.assign(count * kDof, 0.0);
  const auto range = [&](unsigned, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const double *row = rows.data() + i * kRow;
      Chain::rnea(row, row + kDof, row + 2 * kDof, tau.data() + i * kDof);
    }
  };
  std::vector<double> times;
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    if (pool != nullptr) {
      for_each_chunk(*pool, count, 4096, range);
    } else {
      range(0, 0, count);
    }
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  timing.ms = median(times);
  const auto bad = std::find_if(tau.begin(), tau.end(), [](double t) { return !std::isfinite(t); });
  if (bad != tau.end()) {
    timing.failure = "failed: a non-finite torque at state " + std::to_string((bad - tau.begin()) / kDof);
  } else if (!(timing.ms > 0)) {
    timing.failure = "failed: no measurable time";
  } else {
    timing.ok = true;
  }
  return timing;
}

Accuracy compare(const std::vector<float> &gpu, std::size_t stride, const std::vector<double> &cpu, std::size_t count) {
  return compare_any(gpu, stride, cpu, count);
}
Accuracy compare(const std::vector<double> &gpu, std::size_t stride, const std::vector<double> &cpu, std::size_t count) {
  return compare_any(gpu, stride, cpu, count);
}

}  // namespace kiln_bench_rnea
