// kiln internal: how device-image messages name a device and a list of archs.
#pragma once

#include <string>
#include <vector>

#include <kiln/identity.hpp>

namespace kiln::load {

// "sm_80,sm_90".
inline std::string arch_list(const std::vector<Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) {
    if (!text.empty()) text += ',';
    text += arch.to_string();
  }
  return text;
}

// "device 0 (NVIDIA H200, sm_90)".
inline std::string device_text(const DeviceIdentity &device) {
  return "device " + std::to_string(device.ordinal) + " (" +
         (device.name.empty() ? std::string("unnamed") : device.name) + ", " + device.arch_name() + ")";
}

}  // namespace kiln::load
