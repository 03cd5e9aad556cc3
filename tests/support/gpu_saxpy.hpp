// GPU test helpers: driver entry points as the CUDA 13 lookup hands them out, and a saxpy
// (+ optional scale) run through a loaded KernelLibrary.
#pragma once

#include <doctest/doctest.h>

#include <cuda.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <kiln/kernels.hpp>

#include "device/discover.hpp"
#include "device/driver.hpp"

namespace kiln::test {

struct DriverMemory {
  decltype(&::cuMemAlloc) alloc;
  decltype(&::cuMemFree) free;
  decltype(&::cuMemcpyHtoD) to_device;
  decltype(&::cuMemcpyDtoH) to_host;
  // Not cuCtxSynchronize: for CUDA 13.0, cuGetProcAddress hands out cuCtxSynchronize_v2(CUcontext)
  // under that name (cudaTypedefs.h: PFN_cuCtxSynchronize_v13000), not cuda.h's (void) one.
  decltype(&::cuStreamSynchronize) synchronize;
  decltype(&::cuCtxSetCurrent) set_current;
  DriverMemory() {
    auto &driver = kiln::device::Driver::instance();
    alloc = driver.proc_as<decltype(alloc)>("cuMemAlloc");
    free = driver.proc_as<decltype(free)>("cuMemFree");
    to_device = driver.proc_as<decltype(to_device)>("cuMemcpyHtoD");
    to_host = driver.proc_as<decltype(to_host)>("cuMemcpyDtoH");
    synchronize = driver.proc_as<decltype(synchronize)>("cuStreamSynchronize");
    set_current = driver.proc_as<decltype(set_current)>("cuCtxSetCurrent");
    const bool all = alloc != nullptr && free != nullptr && to_device != nullptr &&
                     to_host != nullptr && synchronize != nullptr && set_current != nullptr;
    REQUIRE(all);
  }
};

// y = 3 x + y through the library's saxpy (and scale<float> when given its lowered name);
// returns the number of wrong elements.
inline int run_saxpy(const kiln::KernelLibrary &library, const std::string &scale_name = {}) {
  DriverMemory cu;
  REQUIRE(cu.set_current(library.context()) == CUDA_SUCCESS);
  const int n = 10000;
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 100) * 0.25f;
    y[i] = 1.0f - static_cast<float>(i % 7);
  }
  const std::size_t bytes = sizeof(float) * n;
  CUdeviceptr dx = 0, dy = 0;
  REQUIRE(cu.alloc(&dx, bytes) == CUDA_SUCCESS);
  REQUIRE(cu.alloc(&dy, bytes) == CUDA_SUCCESS);
  REQUIRE(cu.to_device(dx, x.data(), bytes) == CUDA_SUCCESS);
  REQUIRE(cu.to_device(dy, y.data(), bytes) == CUDA_SUCCESS);
  float a = 3.0f;
  int count = n;
  void *args[] = {&a, &dx, &dy, &count};
  const unsigned blocks = static_cast<unsigned>((n + 127) / 128);
  library.launch("saxpy", {blocks, 1, 1}, {128, 1, 1}, 0, nullptr, args);
  float factor = 2.0f;
  if (!scale_name.empty()) {
    void *scale_args[] = {&dy, &factor, &count};
    library.launch(scale_name, {blocks, 1, 1}, {128, 1, 1}, 0, nullptr, scale_args);
  }
  REQUIRE(cu.synchronize(nullptr) == CUDA_SUCCESS);  // the legacy default stream the launches used
  REQUIRE(cu.to_host(out.data(), dy, bytes) == CUDA_SUCCESS);
  cu.free(dx);
  cu.free(dy);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    float expected = 3.0f * x[i] + y[i];
    if (!scale_name.empty()) expected *= factor;
    if (std::fabs(out[i] - expected) > 1e-4f) ++wrong;
  }
  return wrong;
}

inline kiln::DeviceIdentity live_device() {
  const kiln::DeviceReport report = kiln::device::discover(std::nullopt);
  INFO(report.detail);
  REQUIRE(report.state == kiln::DriverState::ok);
  REQUIRE_FALSE(report.devices.empty());
  return report.devices.front();
}

}  // namespace kiln::test
