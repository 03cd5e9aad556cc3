// Runtime internals shared by its translation units.
#pragma once

#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <optional>
#include <vector>

#include <kiln/kernels.hpp>
#include <kiln/runtime.hpp>

#include "load/host_kernels.hpp"
#include "load/report_pool.hpp"
#include "files/file_identity.hpp"
#include "remote/configured.hpp"
#include "store/storage.hpp"
#include "store/maintenance/verification_records.hpp"

namespace kiln::swap {
class GenerationTable;
}

namespace kiln {

struct Runtime::State {
  RuntimeOptions options;
  std::unique_ptr<store::Storage> storage;  // every store layer, the writable cache last
  // The writable cache's remote caches, read on first use (kiln/remote.hpp): what a build may
  // fetch instead of compiling, and where it offers what it built.
  std::unique_ptr<remote::ConfiguredRemotes> remotes;
  // <cache>/verified: lets a fresh process skip hashing an unchanged plugin file.
  std::unique_ptr<store::VerificationRecords> verification_records;
  std::optional<DeviceIdentity> declared;  // parsed KILN_DEVICE / options.declared_device
  mutable std::once_flag devices_once;
  mutable std::optional<DeviceReport> device_report;

  const store::LocalStore &writable() const { return storage->writable(); }
  // storage->resolve, its errors typed as Runtime::resolve's: the remembered resolution, shared.
  std::shared_ptr<const Resolution> resolved(const std::string &consumer, const std::string &name,
                                             std::uint64_t *serial = nullptr) const;

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

  // check -> verify -> load -> resolve kernels of a resolved device-image artifact on the
  // devices `load` names (src/runtime/kernels.cpp); report filled when not null.
  DeviceKernels load_images(const Resolution &resolution, const DeviceLoadOptions &load,
                            KernelLoadReport *report, double resolve_ms) const;
  // resolve + load_images on one device: what kiln.host.kernels/1 hands plugins.
  KernelLibrary load_images_on(const std::string &consumer, const std::string &name, int device) const;
  // load_images_on as the loader's kernel source, made once: each loaded plugin holds it through
  // a shared_ptr that shares ownership of this State (no allocation per load), so the State
  // outlives the Runtime as long as a plugin may ask for kernels.
  load::KernelSource kernel_source;
  // The reports of this Runtime's unloaded Modules, for its next loads (load/report_pool.hpp).
  std::shared_ptr<load::ReportPool> reports = std::make_shared<load::ReportPool>();

  mutable std::mutex cache_mutex;  // guards images

  // Device images read and verified (digest, structure), ready for the driver: one image each,
  // with the artifact's kernel names. Reused while the file keeps its identity (any write
  // changes its ctime; entries are replaced by rename, never edited), so a warm load reads and
  // hashes nothing; the bytes handed to the driver are always bytes that were verified. Bounded:
  // past kImageCacheBytes the cache starts over.
  struct CachedImages {
    files::FileIdentity id;
    std::shared_ptr<const KernelImages> images;
  };
  static constexpr std::uint64_t kImageCacheBytes = 64ull << 20;
  mutable std::map<std::string, CachedImages> images;  // image file path
  mutable std::uint64_t image_bytes = 0;
  std::shared_ptr<const KernelImages> verified_image(const Resolution &resolution, std::size_t index) const;

  // The cross-process swap trigger (src/swap/generations.hpp): after a commit that changed
  // what the writable manifest names for consumer/name (Storage::on_rename), running watchers
  // are told (src/runtime/trigger.cpp). Never throws: no trigger (no writable cache, a full
  // table) is logged.
  void bump_generation(const std::string &consumer, const std::string &name) const noexcept;
  mutable std::mutex generations_mutex;
  mutable std::shared_ptr<swap::GenerationTable> generations;  // opened on the first bump

  // A load of an entry of the writable cache records its use for kiln gc (store/maintenance/usage.hpp),
  // asking the file system once per entry per process. Never throws.
  void note_use(const Resolution &resolution) const noexcept;
  mutable std::mutex uses_mutex;
  mutable std::set<std::string> uses_noted;  // entry directories

  mutable std::once_flag checked_once;
  mutable std::vector<DeviceIdentity> checked;
};

}  // namespace kiln
