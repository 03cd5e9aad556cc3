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

  // Device discovery, once (cuInit costs 100-235 ms). Never throws.
  const DeviceReport &devices() const;
  void log(LogLevel level, const std::string &message) const {
    if (options.log) options.log(level, message);
  }

  // The devices checks run against. A declared device stands in without touching the driver,
  // so a declared load or build never pays cuInit (100-235 ms); only doctor probes both.
  std::vector<DeviceIdentity> check_devices() const { return checked_devices(); }
  // The same, computed once (device discovery runs once anyway): no copy per load.
  const std::vector<DeviceIdentity> &checked_devices() const;

  // Runtime::resolve over every layer, and over one (nullopt-like empty Resolution when absent).
  Resolution resolve(const std::string &consumer, const std::string &name) const;
  // resolve, shared and remembered: reused while every manifest it consulted and its entry's
  // meta.json keep their identity (a warm resolve is a few stat calls, no parse, no copy).
  std::shared_ptr<const Resolution> resolve_shared(const std::string &consumer, const std::string &name) const;
  Resolution resolve_in(std::size_t store_index, const std::string &consumer, const std::string &name,
                        bool *consumer_seen, std::vector<std::string> *known) const;

  // check -> verify -> load -> resolve kernels of a resolved device-image artifact on the
  // devices `load` names (src/runtime/kernels.cpp); report filled when not null.
  DeviceKernels load_images(const Resolution &resolution, const DeviceLoadOptions &load,
                            KernelLoadReport *report, double resolve_ms) const;
  // resolve + load_images on one device: what kiln.host.kernels/1 hands plugins.
  KernelLibrary load_images_on(const std::string &consumer, const std::string &name, int device) const;

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

  struct CachedResolution {
    std::vector<std::string> manifest_files;               // every layer consulted, in order
    std::vector<std::optional<store::FileIdentity>> manifest_ids;
    std::string meta_file;
    store::FileIdentity meta_id;
    std::shared_ptr<const Resolution> resolution;
  };
  mutable std::map<std::string, std::shared_ptr<const CachedResolution>> resolutions;  // "consumer/name"

  // Device images read and verified (digest, structure), ready for the driver: one image each,
  // with the artifact's kernel names. Reused while the file keeps its identity (any write
  // changes its ctime; entries are replaced by rename, never edited), so a warm load reads and
  // hashes nothing; the bytes handed to the driver are always bytes that were verified. Bounded:
  // past kImageCacheBytes the cache starts over.
  struct CachedImages {
    store::FileIdentity id;
    std::shared_ptr<const KernelImages> images;
  };
  static constexpr std::uint64_t kImageCacheBytes = 64ull << 20;
  mutable std::map<std::string, CachedImages> images;  // image file path
  mutable std::uint64_t image_bytes = 0;
  std::shared_ptr<const KernelImages> verified_image(const Resolution &resolution, std::size_t index) const;

  mutable std::once_flag checked_once;
  mutable std::vector<DeviceIdentity> checked;

  std::shared_ptr<const store::Manifest> manifest(const store::ConsumerLayout &layout) const;
  CachedEntry entry(const boost::filesystem::path &entry_dir, const std::string &what) const;
};

}  // namespace kiln
