// kiln IK tests, suite "gpu": the self-test and the warm-start state of a hot swap on a device,
// and 20 swaps on the device under a solving thread (skipped visibly without one,
// tests/support/main.cpp). The host-path versions are test_ik_selftest.cpp, test_ik_state.cpp and
// test_ik_swap.cpp.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/ext/selftest.h>

#include "ik_swap_run.hpp"
#include "ik_test_support.hpp"

namespace {

using kiln::test::ik::Batch;
using kiln::test::ik::SwapRunOptions;
using kiln::test::ik::SwapRunResult;
using kiln::test::ik::check_swap_run;
using kiln::test::ik::swap_under_solves;
using kiln::test::ik::Solver;
using kiln::test::ik::Trajectories;
namespace blob_at = kiln::test::ik::state_blob;

std::vector<uint32_t> solve_cycle(Solver &solver, const Trajectories &paths, Batch &batch, uint32_t cycle) {
  kiln_ik_options options = kiln::test::ik::options();
  options.flags = KILN_IK_SOLVE_WARM_START;
  batch.problem.options = &options;
  paths.targets(solver, batch.problem.count, cycle, batch.targets.data());
  char message[512] = "";
  REQUIRE_MESSAGE(solver.ik->solve(solver.instance.handle(), &batch.problem, &batch.result, message, sizeof message) ==
                      KILN_OK,
                  message);
  batch.problem.options = nullptr;
  return std::vector<uint32_t>(batch.iterations.begin(), batch.iterations.begin() + batch.problem.count);
}

uint64_t total(const std::vector<uint32_t> &values) {
  uint64_t sum = 0;
  for (uint32_t v : values) sum += v;
  return sum;
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("ik selftest: GPU: both robots pass on device 0 (activate(0, 1024)); the broken variant fails") {
    for (const std::string &file : std::vector<std::string>{KILN_IK_PLUGIN_IIWA14, KILN_IK_PLUGIN_PANDA, KILN_IK_PLUGIN_IIWA14_B,
                                                                   KILN_IK_PLUGIN_IIWA14_BROKEN}) {
      CAPTURE(file);
      Solver solver(file, 0, 1024, std::nullopt);
      const auto *selftest = solver.instance.interface<kiln_selftest_v1>(KILN_SELFTEST_INTERFACE_ID);
      REQUIRE(selftest != nullptr);
      char message[512] = "";
      double first_ms = 0, ms = 0;
      kiln_status status = KILN_OK;
      for (int run = 0; run < 3; ++run) {
        const auto start = std::chrono::steady_clock::now();
        status = selftest->run(solver.instance.handle(), message, sizeof message);
        ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (run == 0) first_ms = ms;
      }
      MESSAGE(file << ": " << message << " (first run " << first_ms << " ms, third " << ms << " ms on device 0)");
      if (file == KILN_IK_PLUGIN_IIWA14_BROKEN) {
        CHECK(status != KILN_OK);
        CHECK(std::string(message).find("target 0") != std::string::npos);
      } else {
        CHECK(status == KILN_OK);
      }
    }
  }

  TEST_CASE("ik state: GPU: export after warm solves on the device, import into a fresh device instance and a host one") {
    const uint32_t slots = 64;
    Solver first(KILN_IK_PLUGIN_IIWA14, 0, slots, std::nullopt), second(KILN_IK_PLUGIN_IIWA14, 0, slots, std::nullopt),
        fresh(KILN_IK_PLUGIN_IIWA14, 0, slots, std::nullopt), host(KILN_IK_PLUGIN_IIWA14, -1, slots);
    const Trajectories paths(first);
    Batch a(slots, first.dof), b(slots, first.dof), c(slots, first.dof), h(slots, first.dof);
    uint64_t warm_iterations = 0;
    for (uint32_t t = 0; t < 50; ++t) {
      const uint64_t n = total(solve_cycle(first, paths, a, t));
      if (t > 0) warm_iterations += n;
    }
    std::vector<unsigned char> blob;
    std::string message;
    REQUIRE_MESSAGE(first.export_state(blob, &message) == KILN_OK, message);
    for (uint32_t s = 0; s < slots; ++s) {
      CHECK(blob_at::valid(blob, first.dof, s) == 1);
      for (uint32_t j = 0; j < first.dof; ++j) CHECK(blob_at::joint(blob, first.dof, s, j) == a.q[s * first.dof + j]);
    }
    REQUIRE_MESSAGE(second.import_state(blob, &message) == KILN_OK, message);
    REQUIRE_MESSAGE(host.import_state(blob, &message) == KILN_OK, message);

    const std::vector<uint32_t> continued = solve_cycle(first, paths, a, 50);
    const std::vector<uint32_t> imported = solve_cycle(second, paths, b, 50);
    const std::vector<uint32_t> cold = solve_cycle(fresh, paths, c, 50);
    const std::vector<uint32_t> on_host = solve_cycle(host, paths, h, 50);
    MESSAGE("iterations over " << slots << " targets right after the import: device " << total(imported)
                               << ", host " << total(on_host) << "; the exporter " << total(continued)
                               << "; a fresh instance " << total(cold) << "; mean while tracking "
                               << static_cast<double>(warm_iterations) / (49.0 * slots));
    CHECK(imported == continued);
    CHECK(b.q == a.q);
    CHECK(total(imported) < total(cold));
    CHECK(total(on_host) < total(cold));
  }

  TEST_CASE("ik state: GPU: device-memory solves on the caller's stream record the slots too") {
    const uint32_t slots = 32;
    Solver solver(KILN_IK_PLUGIN_PANDA, 0, slots, std::nullopt);
    const Trajectories paths(solver);
    Batch batch(slots, solver.dof);
    paths.targets(solver, slots, 3, batch.targets.data());
    float *targets = nullptr, *q = nullptr;
    cudaStream_t stream = nullptr;
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaMalloc(reinterpret_cast<void **>(&targets), batch.targets.size() * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMalloc(reinterpret_cast<void **>(&q), batch.q.size() * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMemcpy(targets, batch.targets.data(), batch.targets.size() * sizeof(float), cudaMemcpyHostToDevice) ==
            cudaSuccess);
    kiln_ik_problem problem = batch.problem;
    problem.memory = KILN_IK_MEMORY_DEVICE;
    problem.targets = targets;
    problem.stream = stream;
    kiln_ik_result result{};
    result.struct_size = sizeof result;
    result.q = q;
    char message[512] = "";
    REQUIRE_MESSAGE(solver.ik->solve(solver.instance.handle(), &problem, &result, message, sizeof message) == KILN_OK,
                    message);
    REQUIRE(cudaMemcpy(batch.q.data(), q, batch.q.size() * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    std::vector<unsigned char> blob;
    REQUIRE(solver.export_state(blob) == KILN_OK);
    for (uint32_t s = 0; s < slots; ++s) {
      CHECK(blob_at::valid(blob, solver.dof, s) == 1);
      for (uint32_t j = 0; j < solver.dof; ++j) CHECK(blob_at::joint(blob, solver.dof, s, j) == batch.q[s * solver.dof + j]);
    }
    cudaFree(targets);
    cudaFree(q);
    cudaStreamDestroy(stream);
  }

  TEST_CASE("ik swap: GPU: 20 swaps between iiwa14 and iiwa14-b on device 0 under a solving thread; every answer right, "
            "the state carried, device memory back after the last retirement") {
    SwapRunOptions options;
    options.device = 0;
    options.device_used = []() -> std::optional<std::size_t> {
      std::size_t free = 0, total = 0;  // cudaMemGetInfo: cuMemGetInfo in the primary context the plugins share
      if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
      return total - free;
    };
    const SwapRunResult run = swap_under_solves(options);
    check_swap_run(run, options.swaps);
    REQUIRE(run.device_before.has_value());
    REQUIRE(run.device_after.has_value());
    // Bound: 2 MiB, one page of the driver's device allocations (what cuMemGetInfo moves by), so a
    // single lazily made driver allocation may show but nothing per swap: one version reserves
    // device_bytes for max_batch 16384 targets, and leaking that on each of the 20 swaps would add
    // 20 reservations (checked to be at least 4 bounds' worth, so such a leak cannot hide).
    const double mib = 1024.0 * 1024.0;
    const double grown = (static_cast<double>(*run.device_after) - static_cast<double>(*run.device_before)) / mib;
    MESSAGE("device memory in use " << static_cast<double>(*run.device_before) / mib << " MiB before the 20 swaps, "
                                    << static_cast<double>(*run.device_after) / mib
                                    << " MiB after the last retirement (" << grown << " MiB); one version reserves "
                                    << static_cast<double>(run.device_bytes) / mib << " MiB");
    REQUIRE(20.0 * static_cast<double>(run.device_bytes) >= 4 * 2 * mib);
    CHECK(grown <= 2.0);
  }
}
