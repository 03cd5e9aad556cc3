// kiln: arch names, device identities, declared devices and the live-device report.
#include <cuda.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/version.hpp>

#include "device/discover.hpp"
#include "device/driver.hpp"

namespace kiln {
namespace {

constexpr const char *kArchForms =
    "expected sm_XY or compute_XY with an optional a or f suffix (e.g. sm_87, sm_90a, sm_100f, "
    "compute_90); CUDA 13 targets sm_75 ... sm_121";

constexpr const char *kDeclaredForm =
    "sm_XY[,driver=N][,integrated=0|1][,name=TEXT][,sm_count=N][,memory=N[K|M|G|T]], e.g. "
    "\"sm_87,driver=12060,integrated=1,name=Orin,sm_count=16,memory=8G\"";

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> items;
  for (;;) {
    const auto at = text.find(separator);
    items.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return items;
    text.remove_prefix(at + 1);
  }
}

// Whole-text unsigned integer; nullopt on anything else (sign, spaces, overflow).
template <class T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  if (text.empty()) return std::nullopt;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// CC (major*10+minor) of the integrated GPUs CUDA knows: Xavier sm_72, Orin sm_87,
// Thor sm_101 (CUDA 12.9's name) / sm_110, DGX Spark GB10 sm_121.
bool integrated_by_default(int cc) {
  return cc == 72 || cc == 87 || cc == 101 || cc == 110 || cc == 121;
}

[[noreturn]] void bad_declared(std::string_view text, const std::string &why) {
  throw UsageError("declared device " + quoted(text) + ": " + why + "; the form is " + kDeclaredForm);
}

// "8G", "8GiB", "16384M", "1073741824" → bytes (K/M/G/T are powers of 1024).
std::optional<std::uint64_t> parse_memory(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const auto number = parse_number<std::uint64_t>(text.substr(0, digits));
  if (!number) return std::nullopt;
  std::string unit(text.substr(digits));
  for (auto &c : unit) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  if (unit.size() == 3 && unit.compare(1, 2, "IB") == 0) unit.resize(1);
  if (unit.size() == 2 && unit[1] == 'B') unit.resize(1);
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "K") {
    shift = 10;
  } else if (unit == "M") {
    shift = 20;
  } else if (unit == "G") {
    shift = 30;
  } else if (unit == "T") {
    shift = 40;
  } else {
    return std::nullopt;
  }
  if (*number > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return *number << shift;
}

// "13000" or "13.0" / "12.6" → 13000 / 12060.
std::optional<int> parse_driver_version(std::string_view text) {
  const auto dot = text.find('.');
  if (dot == std::string_view::npos) {
    const auto value = parse_number<int>(text);
    if (!value || *value < 1000) return std::nullopt;
    return value;
  }
  const auto major = parse_number<int>(text.substr(0, dot));
  const auto minor = parse_number<int>(text.substr(dot + 1));
  if (!major || !minor || *major < 1 || *major > 1000000 || *minor > 99) return std::nullopt;
  return *major * 1000 + *minor * 10;
}

}  // namespace

Arch Arch::parse(std::string_view text) {
  Arch arch;
  std::string_view rest;
  if (starts_with(text, "sm_")) {
    arch.kind = Kind::sass;
    rest = text.substr(3);
  } else if (starts_with(text, "compute_")) {
    arch.kind = Kind::ptx;
    rest = text.substr(8);
  } else {
    throw UsageError("invalid arch " + quoted(text) + ": " + kArchForms);
  }
  std::size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  const std::string_view suffix = rest.substr(digits);
  if (digits < 2 || digits > 3 || rest[0] == '0' ||
      !(suffix.empty() || suffix == "a" || suffix == "f")) {
    throw UsageError("invalid arch " + quoted(text) + ": " + kArchForms);
  }
  // Major is every digit but the last: sm_87 → 8.7, sm_121 → 12.1.
  arch.major = *parse_number<int>(rest.substr(0, digits - 1));
  arch.minor = rest[digits - 1] - '0';
  arch.suffix = suffix.empty() ? '\0' : suffix[0];
  if (arch.cc() < 75) {
    throw UsageError("arch " + quoted(text) + " is compute capability " +
                     std::to_string(arch.major) + "." + std::to_string(arch.minor) +
                     ", which CUDA 13 no longer targets (sm_5x ... sm_72 were removed); CUDA 13 "
                     "targets sm_75 ... sm_121, e.g. sm_87 (Orin), sm_90, sm_110 (Thor)");
  }
  if (arch.suffix == 'a' && arch.cc() < 90) {
    throw UsageError("invalid arch " + quoted(text) +
                     ": arch-specific (a) targets exist from sm_90a on; use " +
                     std::string(text.substr(0, text.size() - 1)) + " instead");
  }
  if (arch.suffix == 'f' && arch.cc() < 100) {
    throw UsageError("invalid arch " + quoted(text) +
                     ": family (f) targets exist from sm_100f on; use " +
                     std::string(text.substr(0, text.size() - 1)) + " instead");
  }
  return arch;
}

std::vector<Arch> Arch::parse_list(std::string_view comma_list) {
  std::vector<Arch> archs;
  const auto items = split(comma_list, ',');
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto item = trim(items[i]);
    if (item.empty()) {
      throw UsageError("arch list " + quoted(comma_list) + ": item " + std::to_string(i + 1) +
                       " is empty; write archs separated by single commas, e.g. "
                       "\"sm_87,sm_90,compute_90\"");
    }
    const Arch arch = parse(item);
    if (std::find(archs.begin(), archs.end(), arch) != archs.end()) {
      throw UsageError("arch list " + quoted(comma_list) + ": " + quoted(item) +
                       " is listed twice; list each arch once");
    }
    archs.push_back(arch);
  }
  return archs;
}

std::string Arch::to_string() const {
  std::string text = kind == Kind::sass ? "sm_" : "compute_";
  text += std::to_string(major) + std::to_string(minor);
  if (suffix != '\0') text += suffix;
  return text;
}

std::string DeviceIdentity::arch_name() const {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

std::string DeviceIdentity::label() const {
  return "device " + std::to_string(ordinal) + " (" + name + ", " + arch_name() + (declared ? ", declared" : "") + ")";
}

const char *to_string(DriverState state) {
  switch (state) {
    case DriverState::ok: return "ok";
    case DriverState::no_driver: return "no_driver";
    case DriverState::stub_library: return "stub_library";
    case DriverState::no_device: return "no_device";
    case DriverState::init_failed: return "init_failed";
  }
  return "unknown";
}

std::vector<DeviceIdentity> DeviceReport::effective() const {
  if (declared) return {*declared};
  return devices;
}

DeviceIdentity parse_declared_device(std::string_view text) {
  const auto items = split(text, ',');
  const auto arch_text = trim(items[0]);
  if (arch_text.empty()) bad_declared(text, "the arch is missing");
  Arch arch;
  try {
    arch = Arch::parse(arch_text);
  } catch (const UsageError &error) {
    bad_declared(text, error.what());
  }
  if (arch.kind != Arch::Kind::sass || arch.suffix != '\0') {
    bad_declared(text, quoted(arch_text) + " is not a device: a declared device is a compute "
                                           "capability, written sm_" +
                           std::to_string(arch.major) + std::to_string(arch.minor) +
                           " (no compute_, no a or f suffix)");
  }

  DeviceIdentity device;
  device.declared = true;
  device.cc_major = arch.major;
  device.cc_minor = arch.minor;
  device.name = "declared " + device.arch_name();
  device.driver_version = CUDA_VERSION;
  device.integrated = integrated_by_default(arch.cc());

  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 1; i < items.size(); ++i) {
    const auto item = trim(items[i]);
    const auto eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos || eq == 0) {
      bad_declared(text, "item " + quoted(item) + " is not key=value");
    }
    const std::string key(trim(item.substr(0, eq)));
    const auto value = trim(item.substr(eq + 1));
    if (!seen.insert(key).second) bad_declared(text, "key " + quoted(key) + " is given twice");
    if (key == "driver") {
      const auto version = parse_driver_version(value);
      if (!version) {
        bad_declared(text, "driver=" + std::string(value) +
                               " is not a CUDA driver version (write 12060 or 12.6)");
      }
      device.driver_version = *version;
    } else if (key == "integrated") {
      if (value == "1" || value == "true" || value == "yes") {
        device.integrated = true;
      } else if (value == "0" || value == "false" || value == "no") {
        device.integrated = false;
      } else {
        bad_declared(text, "integrated=" + std::string(value) + " is not 0 or 1");
      }
    } else if (key == "name") {
      if (value.empty()) bad_declared(text, "name= is empty");
      device.name = std::string(value);
    } else if (key == "sm_count") {
      const auto count = parse_number<int>(value);
      if (!count || *count <= 0) {
        bad_declared(text, "sm_count=" + std::string(value) + " is not a positive number");
      }
      device.sm_count = *count;
    } else if (key == "memory") {
      const auto bytes = parse_memory(value);
      if (!bytes || *bytes == 0) {
        bad_declared(text, "memory=" + std::string(value) +
                               " is not a size (bytes, or a number with K, M, G or T)");
      }
      device.total_memory = *bytes;
    } else {
      bad_declared(text, "unknown key " + quoted(key) +
                             " (known: driver, integrated, name, sm_count, memory)");
    }
  }
  return device;
}

HostRequirements HostRequirements::current() {
  HostRequirements host;
  host.key_schema = kKeySchema;
  host.artifact_schema = kArtifactSchema;
  host.abi_version = kAbiVersion;
  host.abi_required = KILN_ABI_MAKE_VERSION(KILN_ABI_VERSION_MAJOR_OF(kAbiVersion), 0);
  return host;
}

namespace device {
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
  std::optional<DeviceIdentity> declared;
  if (declared_text) declared = parse_declared_device(*declared_text);
  DeviceReport report = discover(Driver::instance(), std::nullopt);
  report.declared = std::move(declared);
  return report;
}

DeviceReport discover(Driver &driver, const std::optional<std::string> &declared_text) {
  DeviceReport report;
  if (declared_text) report.declared = parse_declared_device(*declared_text);
  report.state = driver.state();
  report.detail = driver.detail();
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

}  // namespace device
}  // namespace kiln
