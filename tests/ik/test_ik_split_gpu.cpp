// kiln IK tests, gpu suite: the split form on a real device against the nvcc form. The device
// images are built by NVRTC into a temporary cache (the recipe's archs include sm_90, so an H200
// runs its exact SASS); the host part is the CMake-built kiln_ik_iiwa14_split, which takes the
// kernel, the launch and every driver call from kiln through kiln.host.kernels/1.
//   build/tests/ik/kiln_ik_tests --test-suite=gpu -tc='ik split*'
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/ext/selftest.h>

#include "ik_split_support.hpp"
#include "ik_test_support.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

namespace {

using namespace kiln::test::ik_split;

std::optional<std::string> no_gpu_or_nvrtc() {
  if (auto why = kiln::test::no_gpu()) return why;
  return kiln::test::no_nvrtc();
}

#define KILN_SPLIT_CUDA_REQUIRE(call)                                         \
  do {                                                                        \
    const cudaError_t error_ = (call);                                        \
    REQUIRE_MESSAGE(error_ == cudaSuccess, #call ": " << cudaGetErrorString(error_)); \
  } while (false)

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("ik split: GPU solves the same 1024 targets as the nvcc form, to the same accuracy" *
            kiln::test::skip_if(no_gpu_or_nvrtc)) {
    SplitStore store(std::nullopt, /*host_part=*/false);  // the live device decides
    kiln::Module split = store.publish_cmake_host_part();
    kiln::test::ik::LoadedPlugin nvcc_form(KILN_IK_PLUGIN_IIWA14, std::nullopt);
    REQUIRE(split.report().device);
    MESSAGE("device " << split.report().device->name << " (" << split.report().device->arch_name() << ")");

    constexpr uint32_t count = 1024;
    kiln::Instance a = nvcc_form.module->create_instance();
    kiln::Instance b = split.create_instance();
    a.activate(0, count);
    b.activate(0, count);
    kiln_ik_info info_a{}, info_b{};
    info_a.struct_size = info_b.struct_size = sizeof info_a;
    REQUIRE(ik_of(a)->info(a.handle(), &info_a) == KILN_OK);
    REQUIRE(ik_of(b)->info(b.handle(), &info_b) == KILN_OK);
    CHECK(info_b.device_ordinal == 0);
    CHECK(info_b.device_bytes == info_a.device_bytes);  // one layout for both forms
    CHECK(info_b.host_bytes == info_a.host_bytes);

    const Outcome nvcc = solve_random(*ik_of(a), a.handle(), count, 2024);
    const Outcome got = solve_random(*ik_of(b), b.handle(), count, 2024);
    std::size_t same = 0, flipped = 0;  // answers within 1e-3 of each other; converged in one form only
    for (uint32_t i = 0; i < count; ++i) {
      bool close = true;
      for (uint32_t j = 0; j < 7; ++j) close = close && std::fabs(got.q[i * 7 + j] - nvcc.q[i * 7 + j]) < 1e-3f;
      same += close ? 1 : 0;
      flipped += got.converged[i] != nvcc.converged[i] ? 1 : 0;
    }
    MESSAGE("nvcc form: " << nvcc.good << " good, " << nvcc.reported << " converged, mean iterations "
                          << nvcc.mean_iterations << "; split form: " << got.good << " good, " << got.reported
                          << " converged, mean iterations " << got.mean_iterations << "; " << same
                          << " answers within 1e-3 of each other, " << flipped << " converged in one form only");
    CHECK(static_cast<double>(got.good) >= 0.99 * count);
    CHECK(static_cast<double>(got.reported) >= 0.99 * count);
    CHECK(got.worst_report_mismatch < 1e-4);
    // Same kernel source, two compilers (nvcc, NVRTC): the same accuracy. Code generation may differ
    // in the last bit, which can tip a target at the iteration cap either way: at most 0.5 %.
    CHECK(got.good + count / 200 >= nvcc.good);
    CHECK(flipped <= count / 200);
    CHECK(std::fabs(got.mean_iterations - nvcc.mean_iterations) < 0.05 * nvcc.mean_iterations + 0.1);

    const auto *selftest = b.interface<kiln_selftest_v1>(KILN_SELFTEST_INTERFACE_ID);
    REQUIRE(selftest != nullptr);
    char message[512] = "";
    CHECK_MESSAGE(selftest->run(b.handle(), message, sizeof message) == KILN_OK, message);
  }

  TEST_CASE("ik split: GPU device-memory solve, solve_async + poll + wait, warm-start state" *
            kiln::test::skip_if(no_gpu_or_nvrtc)) {
    SplitStore store(std::nullopt, /*host_part=*/false);
    kiln::Module split = store.publish_cmake_host_part();
    constexpr uint32_t count = 256, dof = 7;
    kiln::Instance instance = split.create_instance();
    instance.activate(0, count);
    const kiln_ik_v1 *ik = ik_of(instance);
    const Outcome host_memory = solve_random(*ik, instance.handle(), count, 77);
    CHECK(static_cast<double>(host_memory.good) >= 0.99 * count);

    // The same targets from device memory: the kernel reads and writes the caller's buffers.
    KILN_SPLIT_CUDA_REQUIRE(cudaSetDevice(0));
    float *targets = nullptr, *q = nullptr;
    KILN_SPLIT_CUDA_REQUIRE(cudaMalloc(&targets, host_memory.targets.size() * sizeof(float)));
    KILN_SPLIT_CUDA_REQUIRE(cudaMalloc(&q, host_memory.q.size() * sizeof(float)));
    KILN_SPLIT_CUDA_REQUIRE(cudaMemcpy(targets, host_memory.targets.data(), host_memory.targets.size() * sizeof(float),
                                       cudaMemcpyHostToDevice));
    kiln_ik_problem problem{};
    problem.struct_size = sizeof problem;
    problem.count = count;
    problem.memory = KILN_IK_MEMORY_DEVICE;
    problem.targets = targets;
    kiln_ik_result result{};
    result.struct_size = sizeof result;
    result.q = q;
    char message[512] = "";
    REQUIRE_MESSAGE(ik->solve_async(instance.handle(), &problem, &result, message, sizeof message) == KILN_OK, message);
    int32_t state = KILN_IK_RUNNING;
    for (int spin = 0; spin < 10000000 && state == KILN_IK_RUNNING; ++spin) state = ik->poll(instance.handle());
    CHECK(state == KILN_IK_DONE);
    REQUIRE_MESSAGE(ik->wait(instance.handle(), message, sizeof message) == KILN_OK, message);
    CHECK(ik->poll(instance.handle()) == KILN_IK_IDLE);
    std::vector<float> device_q(host_memory.q.size());
    KILN_SPLIT_CUDA_REQUIRE(cudaMemcpy(device_q.data(), q, device_q.size() * sizeof(float), cudaMemcpyDeviceToHost));
    cudaFree(targets);
    cudaFree(q);
    CHECK(device_q == host_memory.q);  // one kernel, the same inputs

    // Every slot holds a solution now: the exported state has count valid slots.
    size_t size = 0;
    REQUIRE(split.entry().export_state(instance.handle(), nullptr, 0, &size, message, sizeof message) == KILN_OK);
    std::vector<unsigned char> blob(size);
    REQUIRE(split.entry().export_state(instance.handle(), blob.data(), blob.size(), &size, message, sizeof message) ==
            KILN_OK);
    namespace sb = kiln::test::ik::state_blob;
    CHECK(sb::word(blob, sb::kSlots) == count);
    for (uint32_t slot = 0; slot < count; ++slot) CHECK(sb::valid(blob, dof, slot) == 1);
  }
}
