// kiln TrajOpt tests, suite "gpu" (skipped visibly without a CUDA device): the iiwa14 N=64 plugin on
// device 0: 256 problems judged in double, agreement with the host path of the same plugin, the
// asynchronous calls, device-memory buffers, warm start and the self-test on the device; revision
// 1.1's cases (goals out of reach kept within the limits, tracking, the shifted warm start).
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "trajopt_test_support.hpp"
#include "trajopt_tracking_cases.hpp"

namespace {
using namespace kiln::test::trajopt;
const std::string kPlugin = plugin_file("KILN_TRAJOPT_PLUGIN_IIWA14", KILN_TRAJOPT_PLUGIN_IIWA14);

uint32_t judged_good(const Batch &b) {
  uint32_t good = 0;
  for (uint32_t i = 0; i < b.count; ++i) good += judge(b, i).meets() ? 1 : 0;
  return good;
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("trajopt gpu: 256 pose goals, N = 64: every goal within 1 mm / 0.01 rad and every limit kept" *
            kiln::test::skip_if(kiln::test::no_gpu)) {
    Solver s(kPlugin, 0, 256u, std::nullopt);
    Batch b = random_batch(256, 81, Goals::pose);
    REQUIRE(s.solve(b) == KILN_OK);  // the first solve, then timed ones
    double best = 1e9;
    for (int run = 0; run < 5; ++run) {
      const auto start = std::chrono::steady_clock::now();
      REQUIRE(s.solve(b) == KILN_OK);
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    const uint32_t good = judged_good(b);
    MESSAGE("256 problems on the GPU: best of 5 " << best << " ms, converged " << b.converged_count() << ", judged good " << good);
    CHECK(good == 256);
    CHECK(b.converged_count() == 256);
  }

  TEST_CASE("trajopt gpu: the device and the host path of one plugin agree" * kiln::test::skip_if(kiln::test::no_gpu)) {
    Solver gpu(kPlugin, 0, 16u, std::nullopt);
    Solver host(kPlugin, -1, 16u, std::nullopt);
    Batch a = random_batch(16, 82, Goals::mixed), c = random_batch(16, 82, Goals::mixed);
    // One seed on both: with more, the device keeps the seed that converged first in time (they
    // run side by side) and the host the first in order, which may be another local optimum.
    a.options.seeds_per_target = c.options.seeds_per_target = 1;
    REQUIRE(gpu.solve(a) == KILN_OK);
    REQUIRE(host.solve(c) == KILN_OK);
    for (uint32_t i = 0; i < a.count; ++i) {
      CAPTURE(i);
      CHECK(a.converged[i] == 1);
      CHECK(c.converged[i] == 1);
      CHECK(judge(a, i).meets());
      CHECK(a.cost[i] == doctest::Approx(c.cost[i]).epsilon(0.05));
    }
  }

  TEST_CASE("trajopt gpu: solve_async, poll and wait; device-memory buffers; warm start; self-test" *
            kiln::test::skip_if(kiln::test::no_gpu)) {
    Solver s(kPlugin, 0, 32u, std::nullopt);
    Batch b = random_batch(32, 83, Goals::pose);
    char text[512] = "";
    REQUIRE(s.api->solve_async(s.handle(), &b.problem, &b.result, text, sizeof text) == KILN_OK);
    CHECK(s.api->solve_async(s.handle(), &b.problem, &b.result, text, sizeof text) == KILN_ERR_STATE);  // one in flight
    while (s.api->poll(s.handle()) == KILN_TRAJOPT_RUNNING) {
    }
    CHECK(s.api->poll(s.handle()) == KILN_TRAJOPT_DONE);
    REQUIRE(s.api->wait(s.handle(), text, sizeof text) == KILN_OK);
    CHECK(judged_good(b) == 32);
    const std::vector<uint32_t> cold = b.iterations;

    // Warm start: the goals move a little (the joint goals' tip poses, 0.01 rad further).
    for (float &q : b.joint_goals) q += 0.01f;
    kiln_trajopt_common::pose_goals_from_joint_goals<Fk>(b);
    b.options.flags = KILN_TRAJOPT_SOLVE_WARM_START;
    REQUIRE(s.solve(b) == KILN_OK);
    uint32_t warm = 0, cold_total = 0;
    for (uint32_t i = 0; i < b.count; ++i) warm += b.iterations[i], cold_total += cold[i];
    CHECK(judged_good(b) == 32);
    CHECK(warm < cold_total);

    // Device memory: the same problems from device buffers.
    Batch d = random_batch(32, 83, Goals::pose);
    float *q0 = nullptr, *goals = nullptr, *q = nullptr;
    uint8_t *converged = nullptr;
    REQUIRE(cudaMalloc(&q0, d.q0.size() * 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&goals, d.pose_goals.size() * 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&q, d.q.size() * 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&converged, d.count) == cudaSuccess);
    cudaMemcpy(q0, d.q0.data(), d.q0.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(goals, d.pose_goals.data(), d.pose_goals.size() * 4, cudaMemcpyHostToDevice);
    kiln_trajopt_problem problem = d.problem;
    problem.memory = KILN_TRAJOPT_MEMORY_DEVICE;
    problem.q0 = q0, problem.qd0 = nullptr, problem.goal_kinds = nullptr, problem.pose_goals = goals;
    problem.joint_goals = nullptr, problem.dt = nullptr;
    kiln_trajopt_result result{};
    result.struct_size = sizeof result;
    result.q = q, result.converged = converged;
    REQUIRE(s.api->solve(s.handle(), &problem, &result, text, sizeof text) == KILN_OK);
    cudaMemcpy(d.q.data(), q, d.q.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(d.converged.data(), converged, d.count, cudaMemcpyDeviceToHost);
    CHECK(d.converged_count() == 32);
    CHECK(judged_good(d) == 32);
    cudaFree(q0), cudaFree(goals), cudaFree(q), cudaFree(converged);

    std::string message;
    const auto start = std::chrono::steady_clock::now();
    CHECK_MESSAGE(s.selftest(&message) == KILN_OK, message);
    MESSAGE("self-test on the device: "
            << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() << " ms");
  }

  TEST_CASE("trajopt gpu 1.1: goals out of reach come back within every limit, not converged" *
            kiln::test::skip_if(kiln::test::no_gpu)) {
    Solver s(kPlugin, 0, 4u, std::nullopt);
    check_out_of_reach_within_limits(s);
  }

  // A controller's ticks on the instance's own stream run as a captured CUDA graph, replayed while
  // the work repeats; on a caller's stream they are enqueued directly: the same plans, bit for bit,
  // tick after tick, through a change of the batch size and of the outputs asked for.
  TEST_CASE("trajopt gpu: ticks replayed from a captured graph equal ticks enqueued directly" *
            kiln::test::skip_if(kiln::test::no_gpu)) {
    Solver graphed(kPlugin, 0, 2u, std::nullopt), direct(kPlugin, 0, 2u, std::nullopt);
    cudaStream_t stream = nullptr;
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    Batch a = random_batch(2, 85, Goals::joint, 0.4), b = random_batch(2, 85, Goals::joint, 0.4);
    track_minimum_jerk(a);
    track_minimum_jerk(b);
    for (Batch *batch : {&a, &b}) batch->options.seeds_per_target = 1, batch->options.max_iterations = 2;
    const uint32_t D = Dyn::kDof;
    for (uint32_t tick = 0; tick < 24; ++tick) {
      CAPTURE(tick);
      for (Batch *batch : {&a, &b}) {
        batch->problem.count = tick >= 8 && tick < 12 ? 2 : 1;  // a change of shape, and back
        batch->options.flags = tick > 0 ? KILN_TRAJOPT_SOLVE_WARM_SHIFT : 0;
        batch->result.torques = tick >= 16 && tick < 20 ? nullptr : batch->torques.data();
      }
      b.problem.stream = stream;
      std::string message;
      REQUIRE_MESSAGE(graphed.solve(a, &message) == KILN_OK, message);
      REQUIRE_MESSAGE(direct.solve(b, &message) == KILN_OK, message);
      const size_t floats = size_t{a.problem.count} * (kN + 1) * D;
      CHECK(std::memcmp(a.q.data(), b.q.data(), floats * sizeof(float)) == 0);
      CHECK(std::memcmp(a.cost.data(), b.cost.data(), a.problem.count * sizeof(float)) == 0);
      CHECK(std::memcmp(a.within_limits.data(), b.within_limits.data(), a.problem.count) == 0);
      if (a.result.torques != nullptr) CHECK(std::memcmp(a.torques.data(), b.torques.data(), floats * sizeof(float)) == 0);
      check_kept_within_limits(a, 0);
      for (Batch *batch : {&a, &b}) {  // the plant follows knot 1 of problem 0; problem 1 starts over
        const float *plan = batch->trajectory(0);
        for (uint32_t j = 0; j < D; ++j) {
          batch->qd0[j] = (plan[D + j] - plan[j]) / batch->dt[0];
          batch->q0[j] = plan[D + j];
        }
      }
    }
    REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
  }

  TEST_CASE("trajopt gpu 1.1: tracking a reference, and the next tick from the shifted plan" *
            kiln::test::skip_if(kiln::test::no_gpu)) {
    Solver s(kPlugin, 0, 64u, std::nullopt), cold(kPlugin, 0, 64u, std::nullopt);
    check_tracks_reference(s, 64, 0.0f);
    check_tracks_reference(s, 16, 30.0f);
    check_shifted_warm_start(s, cold, 16);
  }
}
