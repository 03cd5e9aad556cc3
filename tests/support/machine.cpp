#include "support/machine.hpp"

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "builder/backends/nvrtc/toolchain.hpp"
#include "builder/toolchain.hpp"
#include "device/discover.hpp"
#include "device/driver.hpp"

namespace kiln::test {
namespace {

constexpr const char *kCudaStub = "/usr/local/cuda/lib64/stubs/libcuda.so";

// Device 0, or why there is none.
std::optional<DeviceIdentity> device_zero(std::string *why) {
  const DeviceReport report = device::discover(std::nullopt);
  if (report.state == DriverState::ok && !report.devices.empty()) return report.devices.front();
  *why = "no CUDA device: " + report.detail;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> no_nvrtc() {
  const auto &status = builder::NvrtcToolchain::instance().nvrtc();
  if (status.found) return std::nullopt;
  return status.detail;
}

std::optional<std::string> no_nvjitlink() {
  const auto &status = builder::NvrtcToolchain::instance().nvjitlink();
  if (status.found) return std::nullopt;
  return status.detail;
}

std::optional<std::string> no_nvfatbin() {
  const auto &status = builder::NvrtcToolchain::instance().nvfatbin();
  if (status.found) return std::nullopt;
  return status.detail;
}

std::optional<std::string> no_toolchain() {
  try {
    builder::find_nvcc();
    builder::find_host_compiler();
    return std::nullopt;
  } catch (const NotFoundError &error) {
    return std::string("no build toolchain: ") + error.what();
  }
}

std::optional<std::string> no_cmake_toolchain() {
  if (auto missing = no_toolchain()) return missing;
  try {
    builder::find_cmake();
    return std::nullopt;
  } catch (const NotFoundError &error) {
    return std::string("no cmake: ") + error.what();
  }
}

std::optional<std::string> cuda_driver() {
  const auto &driver = device::Driver::instance();
  if (!driver.ok()) return std::nullopt;
  return "a CUDA driver is present (" + driver.detail() + "): the no-driver behaviour cannot be reached here";
}

std::optional<std::string> no_cuda_stub() {
  if (boost::filesystem::exists(kCudaStub)) return std::nullopt;
  return std::string("no CUDA toolkit link stub at ") + kCudaStub;
}

std::optional<std::string> no_gpu() {
  std::string why;
  if (device_zero(&why)) return std::nullopt;
  return why;
}

std::optional<std::string> no_ptx_jit() {
  std::string why;
  const auto device = device_zero(&why);
  if (!device) return why;
  const int nvrtc = builder::NvrtcToolchain::instance().nvrtc().version;
  if (device->driver_version >= nvrtc) return std::nullopt;
  return "driver " + std::to_string(device->driver_version) + " is older than NVRTC " + std::to_string(nvrtc) +
         ": it refuses NVRTC's PTX (222)";
}

std::optional<std::string> ptx_jit() {
  std::string why;
  if (!device_zero(&why)) return why;
  if (no_ptx_jit()) return std::nullopt;
  return std::string("the driver JIT-compiles NVRTC's PTX: its refusal cannot be reached here");
}

std::optional<std::string> not_sm_90() {
  std::string why;
  const auto device = device_zero(&why);
  if (!device) return why;
  if (device->arch_name() == "sm_90") return std::nullopt;
  return "device 0 is " + device->arch_name() + ", not sm_90 (the example plugin's SASS)";
}

}  // namespace kiln::test
