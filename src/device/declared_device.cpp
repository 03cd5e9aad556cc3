// kiln: parsing a declared device (KILN_DEVICE's "sm_87,driver=12060,integrated=1,...").
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <kiln/identity.hpp>

#include "support/text.hpp"

namespace kiln {
namespace {

using support::parse_number;
using support::split;
using support::trim;

constexpr const char *kDeclaredForm =
    "sm_XY[,driver=N][,integrated=0|1][,name=TEXT][,sm_count=N][,memory=N[K|M|G|T]], e.g. "
    "\"sm_87,driver=12060,integrated=1,name=Orin,sm_count=16,memory=8G\"";

// CC (major*10+minor) of the integrated GPUs CUDA knows: Xavier sm_72, Orin sm_87,
// Thor sm_101 (CUDA 12.9's name) / sm_110, DGX Spark GB10 sm_121.
bool integrated_by_default(int cc) {
  return cc == 72 || cc == 87 || cc == 101 || cc == 110 || cc == 121;
}

[[noreturn]] void bad_declared(std::string_view text, const std::string &why) {
  throw UsageError("declared device " + support::quoted(text) + ": " + why + "; the form is " + kDeclaredForm);
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
  if (!major || !minor || *major < 1 || *major > 1000000 || *minor < 0 || *minor > 99) return std::nullopt;
  return *major * 1000 + *minor * 10;
}

}  // namespace

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
    bad_declared(text, support::quoted(arch_text) + " is not a device: a declared device is a compute "
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
      bad_declared(text, "item " + support::quoted(item) + " is not key=value");
    }
    const std::string key(trim(item.substr(0, eq)));
    const auto value = trim(item.substr(eq + 1));
    if (!seen.insert(key).second) bad_declared(text, "key " + support::quoted(key) + " is given twice");
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
      bad_declared(text, "unknown key " + support::quoted(key) +
                             " (known: driver, integrated, name, sm_count, memory)");
    }
  }
  return device;
}

}  // namespace kiln
