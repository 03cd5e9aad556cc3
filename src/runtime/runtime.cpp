#include <kiln/runtime.hpp>
#include <kiln/store.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <boost/filesystem/path.hpp>

#include <kiln/version.hpp>
#include <kiln/kernels.hpp>

#include "support/elapsed.hpp"
#include "device/discover.hpp"
#include "load/loader.hpp"
#include "load/model_check.hpp"
#include "runtime/state.hpp"
#include "store/layout.hpp"
#include "remote/config.hpp"
#include "store/maintenance/usage.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

using support::ms_since;

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

// check -> Loader::open of a resolved plugin whose report holds its resolution and resolve time.
// The report is the one the Module keeps: filled in place, never moved field by field. One the
// pool gave back for this resolution and device choice holds its compatibility already.
// resolution_serial: the Storage's serial of a remembered resolution (0: none), under which the
// loader keeps the artifact's descriptor and the pool the report.
Module load_from_report(const std::shared_ptr<Runtime::State> &state, load::ReportPool::Taken taken,
                        const LoadOptions &options, std::uint64_t resolution_serial = 0) {
  LoadReport &report = *taken.report;
  const Resolution &r = report.resolution;
  const auto what = [&r] { return r.consumer + "/" + r.name; };  // for messages only: not built on success
  if (r.kind != kKindPlugin) {
    throw UsageError(what() + " is a \"" + r.kind + "\" artifact (device images), not a plugin: load it with "
                     "Runtime::load_kernels (kiln load lists its kernels)");
  }
  const std::vector<DeviceIdentity> &effective = state->checked_devices();  // discovery (once) is not timed
  const auto start = Clock::now();
  if (options.device >= 0 && static_cast<std::size_t>(options.device) >= effective.size()) {
    throw NotFoundError("device " + std::to_string(options.device) + " does not exist: " +
                        std::to_string(effective.size()) + " device(s) present (" + state->devices().detail + ")");
  }
  const int choice = std::max(options.device, -1);
  if (taken.checked_device != choice) {  // else: this report was filled for the same device
    if (!effective.empty()) {
      report.device = effective[choice >= 0 ? static_cast<std::size_t>(choice) : 0];
    } else {
      report.device.reset();
    }
    report.compatibility =
        check_compatibility(r.identity, HostRequirements::current(), report.device ? &*report.device : nullptr);
  }
  if (!report.compatibility.ok) {
    throw IncompatibleError("artifact " + what() + " (" + r.content_key + ") on " +
                                (report.device ? report.device->label() : std::string("this host")),
                            report.compatibility.reasons);
  }
  load::check_required_model(r, options.model);
  if (!report.device && !r.identity.archs.empty()) {
    state->log(LogLevel::warning, what() + ": no CUDA device (" + state->devices().detail +
                                      "); its device code was not checked and only host-side calls will work");
  }
  report.timings.check_ms = ms_since(start);
  // Kernels a plugin asks for (kiln.host.kernels/1) come from this Runtime's stores; the source
  // shares ownership of the State, so it outlives the Runtime as long as the plugin needs it.
  std::shared_ptr<const load::KernelSource> kernels(state, &state->kernel_source);
  Module module = Loader::open(std::move(taken.report), options.abi_required, state->options.log, std::move(kernels),
                               state->verification_records.get(), {state->reports, resolution_serial, choice});
  state->note_use(module.report().resolution);
  return module;
}

}  // namespace

const char *to_string(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "?";
}

RuntimeOptions RuntimeOptions::from_environment() {
  RuntimeOptions options;
  if (const char *device = ::secure_getenv("KILN_DEVICE"); device != nullptr && *device != '\0') {
    options.declared_device = device;
  }
  return options;  // stores: filled from the environment by Runtime when left empty
}

Runtime::Runtime(RuntimeOptions options) try : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  if (state_->options.declared_device) state_->declared = parse_declared_device(*state_->options.declared_device);
  std::vector<store::StoreLocation> locations;
  if (state_->options.read_only_stores.empty() && state_->options.cache_dir.empty()) {
    locations = store::stores_from_environment();
  } else {
    for (const auto &root : state_->options.read_only_stores) {
      locations.push_back({fs::path(root).lexically_normal(), false, "options"});
    }
    const fs::path cache =
        state_->options.cache_dir.empty() ? store::default_cache_dir() : fs::path(state_->options.cache_dir);
    locations.push_back({cache.lexically_normal(), true, state_->options.cache_dir.empty() ? "environment" : "options"});
  }
  // Once, here: every later safety walk ends at a root free of symlinks the user chose
  // (~/.cache -> /data/cache), so a symlink it meets lies inside a store.
  for (auto &location : locations) location.root = store::resolve_store_root(location.root);
  state_->storage = std::make_unique<store::Storage>(locations);
  // Whatever changes what the writable manifest names (publish, build, import) tells watchers.
  state_->storage->on_rename([state = state_.get()](const std::string &consumer, const std::string &name) {
    state->bump_generation(consumer, name);
  });
  // Remote caches are read on first use (a build), never by loads (kiln/remote.hpp).
  state_->remotes = std::make_unique<remote::ConfiguredRemotes>(remote::config_file_for(state_->writable().root()),
                                                                state_->options.log);
  state_->verification_records =
      std::make_unique<store::VerificationRecords>(state_->writable().root() / "verified");
  state_->kernel_source = [state = state_.get()](const std::string &consumer, const std::string &name, int device) {
    return state->load_images_on(consumer, name, device);
  };
} catch (...) {
  support::rethrow_typed("setting up kiln (stores, KILN_DEVICE)");
}

Runtime::~Runtime() = default;

const std::vector<StoreInfo> &Runtime::stores() const { return state_->storage->infos(); }

const DeviceReport &Runtime::State::devices() const {
  std::call_once(devices_once, [this] { device_report = device::discover(options.declared_device); });
  return *device_report;
}

const DeviceReport &Runtime::devices() const { return state_->devices(); }

void Runtime::log(LogLevel level, const std::string &message) const { state_->log(level, message); }

std::shared_ptr<const Resolution> Runtime::State::resolved(const std::string &consumer, const std::string &name,
                                                           std::uint64_t *serial) const try {
  return storage->resolve(consumer, name, serial);
} catch (...) {
  support::rethrow_typed("resolving " + consumer + "/" + name);
}

Resolution Runtime::resolve(const std::string &consumer, const std::string &name) const {
  return *state_->resolved(consumer, name);
}

const std::vector<DeviceIdentity> &Runtime::State::checked_devices() const {
  std::call_once(checked_once, [this] { checked = declared ? std::vector<DeviceIdentity>{*declared} : devices().effective(); });
  return checked;
}

Compatibility Runtime::check(const Resolution &resolution, const DeviceIdentity *device) const {
  return check_compatibility(resolution.identity, HostRequirements::current(), device);
}

Module Runtime::load(const std::string &consumer, const std::string &name, const LoadOptions &options) const try {
  const auto start = Clock::now();
  std::uint64_t serial = 0;
  const std::shared_ptr<const Resolution> resolution = state_->resolved(consumer, name, &serial);
  // Into the report the Module keeps: one a Module of this resolution gave back holds it already;
  // another one given back is refilled in the storage its strings have.
  load::ReportPool::Taken taken = state_->reports->take(serial);
  if (!taken.resolved) taken.report->resolution = *resolution;
  taken.report->timings.resolve_ms = ms_since(start);
  return load_from_report(state_, std::move(taken), options, serial);
} catch (...) {
  support::rethrow_typed("loading " + consumer + "/" + name);
}

Resolution Runtime::resolve_entry(const std::string &consumer, const std::string &name,
                                  const std::string &content_key) const try {
  return state_->storage->resolve_entry(consumer, content_key, name);
} catch (...) {
  support::rethrow_typed("resolving entry " + content_key + " of " + consumer);
}

Module Runtime::load_entry(const std::string &consumer, const std::string &name, const std::string &content_key,
                           const LoadOptions &options) const try {
  const auto start = Clock::now();
  Resolution resolution = resolve_entry(consumer, name, content_key);
  return load_resolved(std::move(resolution), options, ms_since(start));
} catch (...) {
  support::rethrow_typed("loading entry " + content_key + " of " + consumer);
}

Module Runtime::load_resolved(Resolution resolution, const LoadOptions &options, double resolve_ms) const {
  load::ReportPool::Taken taken = state_->reports->take(0);
  taken.report->resolution = std::move(resolution);
  taken.report->timings.resolve_ms = resolve_ms;
  return load_from_report(state_, std::move(taken), options);
}

void Runtime::State::note_use(const Resolution &resolution) const noexcept {
  if (!resolution.store_writable) return;  // gc never touches read-only layers
  try {
    {
      std::lock_guard<std::mutex> lock(uses_mutex);
      if (uses_noted.count(resolution.entry_dir) != 0) return;  // the warm path: no copy of the name
      uses_noted.insert(resolution.entry_dir);
    }
    store::record_use(writable().layout(resolution.consumer), resolution.content_key);
  } catch (...) {
  }
}

std::vector<ArtifactSummary> Runtime::list(const std::string &consumer) const try {
  return state_->storage->list(consumer);
} catch (...) {
  support::rethrow_typed("listing the artifacts of " + (consumer.empty() ? std::string("every consumer") : consumer));
}

}  // namespace kiln
