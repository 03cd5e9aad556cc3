// Runtime internals shared by its translation units.
#pragma once

#include <mutex>
#include <optional>
#include <vector>

#include <kiln/runtime.hpp>

#include "store/layout.hpp"

namespace kiln {

struct Runtime::State {
  RuntimeOptions options;
  std::vector<store::StoreLocation> locations;  // read-only layers first, the writable cache last
  std::vector<StoreInfo> infos;
  mutable std::once_flag devices_once;
  mutable std::optional<DeviceReport> device_report;

  const store::StoreLocation &writable() const { return locations.back(); }
};

}  // namespace kiln
