// Runtime internals shared by its translation units.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <optional>
#include <vector>

#include <kiln/runtime.hpp>

#include "store/entry.hpp"
#include "store/file_identity.hpp"
#include "store/layout.hpp"
#include "store/manifest.hpp"

namespace kiln {

struct Runtime::State {
  RuntimeOptions options;
  std::vector<store::StoreLocation> locations;  // read-only layers first, the writable cache last
  std::vector<StoreInfo> infos;
  std::optional<DeviceIdentity> declared;  // parsed KILN_DEVICE / options.declared_device
  mutable std::once_flag devices_once;
  mutable std::optional<DeviceReport> device_report;

  const store::StoreLocation &writable() const { return locations.back(); }

  // The devices checks run against. A declared device stands in without touching the driver,
  // so a declared load or build never pays cuInit (100-235 ms); only doctor probes both.
  std::vector<DeviceIdentity> check_devices(const Runtime &runtime) const {
    if (declared) return {*declared};
    return runtime.devices().effective();
  }

  // Parsed manifests and entries, reused while the files' identities (inode, size, times)
  // are unchanged: a warm load then costs a few stat calls instead of three JSON parses.
  // Manifests are replaced by rename and entries never change in place, so an equal
  // identity means equal bytes.
  struct CachedManifest {
    store::FileIdentity id;
    std::shared_ptr<const store::Manifest> manifest;
  };
  struct CachedEntry {
    store::FileIdentity meta_id;
    store::EntryMeta meta;
    ArtifactIdentity identity;
  };
  mutable std::mutex cache_mutex;
  mutable std::map<std::string, CachedManifest> manifests;
  mutable std::map<std::string, CachedEntry> entries;

  std::shared_ptr<const store::Manifest> manifest(const store::ConsumerLayout &layout) const;
  CachedEntry entry(const boost::filesystem::path &entry_dir, const std::string &what) const;
};

}  // namespace kiln
