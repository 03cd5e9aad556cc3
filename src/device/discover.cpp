// kiln internal: the live devices of this process, enumerated through the Driver API
// (see discover.hpp).
#include "device/discover.hpp"

#include <cuda.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include <kiln/identity.hpp>

#include "device/driver.hpp"

namespace kiln::device {
namespace {

// "GPU-" and the 16 bytes as 8-4-4-4-12 lower-case hex, as nvidia-smi prints them.
std::string format_uuid(const CUuuid &uuid) {
  std::string text = "GPU-";
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    const auto byte = static_cast<unsigned char>(uuid.bytes[i]);
    text += kHex[byte >> 4];
    text += kHex[byte & 0xf];
  }
  return text;
}

}  // namespace

DeviceReport discover(const std::optional<std::string> &declared_text) {
  // Parse first: a bad KILN_DEVICE is reported without paying for cuInit.
  if (declared_text) parse_declared_device(*declared_text);
  return discover(Driver::instance(), declared_text);
}

DeviceReport discover(Driver &driver, const std::optional<std::string> &declared_text) {
  DeviceReport report;
  if (declared_text) report.declared = parse_declared_device(*declared_text);
  report.state = driver.state();
  report.detail = report.declared ? without_declare_hint(driver.detail()) : driver.detail();  // advice already taken
  report.library = driver.library();
  report.driver_version = driver.driver_version();
  if (!driver.ok()) return report;

  const Driver::Api &api = driver.api();
  std::string failed_call;
  CUresult failure = CUDA_SUCCESS;
  int failed_ordinal = 0;
  // Records the first failing call; later calls still run but the report is discarded.
  const auto check = [&](CUresult result, const char *call, int ordinal) {
    if (result != CUDA_SUCCESS && failure == CUDA_SUCCESS) {
      failure = result;
      failed_call = call;
      failed_ordinal = ordinal;
    }
    return result == CUDA_SUCCESS;
  };
  const auto attribute = [&](CUdevice handle, CUdevice_attribute which, const char *call,
                             int ordinal) {
    int value = 0;
    check(api.device_get_attribute(&value, which, handle), call, ordinal);
    return value;
  };

  for (int ordinal = 0; ordinal < driver.device_count() && failure == CUDA_SUCCESS; ++ordinal) {
    DeviceIdentity id;
    id.ordinal = ordinal;
    id.driver_version = driver.driver_version();
    CUdevice handle = 0;
    if (!check(api.device_get(&handle, ordinal), "cuDeviceGet", ordinal)) break;

    char name[256] = {};
    if (check(api.device_get_name(name, static_cast<int>(sizeof name), handle), "cuDeviceGetName",
              ordinal)) {
      name[sizeof name - 1] = '\0';
      id.name = name;
    }
    CUuuid uuid{};
    if (check(api.device_get_uuid(&uuid, handle), "cuDeviceGetUuid", ordinal)) {
      id.uuid = format_uuid(uuid);
    }
    id.cc_major = attribute(handle, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", ordinal);
    id.cc_minor = attribute(handle, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", ordinal);
    id.integrated = attribute(handle, CU_DEVICE_ATTRIBUTE_INTEGRATED,
                              "cuDeviceGetAttribute(INTEGRATED)", ordinal) != 0;
    id.sm_count = attribute(handle, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                            "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", ordinal);
    id.pci_device_id = attribute(handle, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
                                 "cuDeviceGetAttribute(PCI_DEVICE_ID)", ordinal);
    std::size_t bytes = 0;
    if (check(api.device_total_mem(&bytes, handle), "cuDeviceTotalMem", ordinal)) {
      id.total_memory = bytes;
    }
    char bus[64] = {};
    if (check(api.device_get_pci_bus_id(bus, static_cast<int>(sizeof bus), handle),
              "cuDeviceGetPCIBusId", ordinal)) {
      bus[sizeof bus - 1] = '\0';
      id.pci_bus_id = bus;
    }
    report.devices.push_back(std::move(id));
  }

  if (failure != CUDA_SUCCESS) {
    report.state = DriverState::init_failed;
    report.detail = failed_call + " failed for device " + std::to_string(failed_ordinal) +
                    " in " + driver.library() + " (driver " +
                    driver_version_text(driver.driver_version()) +
                    "): " + driver.error_text(failure) +
                    "; check nvidia-smi for the device's state, or hide it with "
                    "CUDA_VISIBLE_DEVICES";
    report.devices.clear();
  }
  return report;
}

}  // namespace kiln::device
