#include <kiln/runtime.hpp>

#include <chrono>
#include <algorithm>
#include <cstdlib>
#include <set>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/version.hpp>

#include "support/elapsed.hpp"
#include "device/discover.hpp"
#include "device/identity_json.hpp"
#include "load/loader.hpp"
#include "runtime/state.hpp"
#include "store/entry.hpp"
#include "store/files.hpp"
#include "store/manifest.hpp"
#include "store/names.hpp"
#include "store/safety.hpp"

namespace kiln {
namespace {

using support::ms_since;

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

std::string searched(const std::vector<StoreInfo> &stores) {
  std::string text;
  for (const auto &store : stores) text += (text.empty() ? "" : ", ") + store.root;
  return text;
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

Runtime::Runtime(RuntimeOptions options) : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  if (state_->options.declared_device) state_->declared = parse_declared_device(*state_->options.declared_device);
  if (state_->options.read_only_stores.empty() && state_->options.cache_dir.empty()) {
    state_->locations = store::stores_from_environment();
  } else {
    for (const auto &root : state_->options.read_only_stores) {
      state_->locations.push_back({fs::path(root).lexically_normal(), false, "options"});
    }
    const fs::path cache =
        state_->options.cache_dir.empty() ? store::default_cache_dir() : fs::path(state_->options.cache_dir);
    state_->locations.push_back({cache.lexically_normal(), true, state_->options.cache_dir.empty() ? "environment" : "options"});
  }
  // Once, here: every later safety walk ends at a root free of symlinks the user chose
  // (~/.cache -> /data/cache), so a symlink it meets lies inside a store.
  for (auto &location : state_->locations) {
    location.root = store::resolve_store_root(location.root);
    state_->infos.push_back({location.root.string(), location.writable, location.origin});
  }
}

Runtime::~Runtime() = default;

const std::vector<StoreInfo> &Runtime::stores() const { return state_->infos; }

const DeviceReport &Runtime::State::devices() const {
  std::call_once(devices_once, [this] { device_report = device::discover(options.declared_device); });
  return *device_report;
}

const DeviceReport &Runtime::devices() const { return state_->devices(); }

void Runtime::log(LogLevel level, const std::string &message) const { state_->log(level, message); }

std::shared_ptr<const store::Manifest> Runtime::State::manifest(const store::ConsumerLayout &layout) const {
  const fs::path file = layout.manifest();
  const auto id = store::identify(file);
  if (!id) return nullptr;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    const auto hit = manifests.find(file.string());
    if (hit != manifests.end() && hit->second.id == *id) return hit->second.manifest;
  }
  // Owner and mode are checked whenever the identity is new (chmod and chown change ctime), so
  // a warm hit needs no more than the stat above.
  store::FileIdentity checked_id;
  store::check_store_file_safe(file.string(), &checked_id);
  auto parsed = store::read_manifest(file, layout.consumer());
  if (!parsed) return nullptr;
  auto shared = std::make_shared<const store::Manifest>(std::move(*parsed));
  std::lock_guard<std::mutex> lock(cache_mutex);
  manifests[file.string()] = {checked_id, shared};
  return shared;
}

Runtime::State::CachedEntry Runtime::State::entry(const fs::path &entry_dir, const std::string &what) const {
  const fs::path identity_file = entry_dir / store::kIdentityFile;
  // meta.json stands for the whole entry: entries are written once, under their key, and a
  // replaced entry has a new meta.json inode.
  const auto meta_id = store::identify(entry_dir / store::kMetaFile);
  if (meta_id) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    const auto hit = entries.find(entry_dir.string());
    if (hit != entries.end() && hit->second.meta_id == *meta_id) {
      return hit->second;
    }
  }
  CachedEntry fresh;
  // Both files under the artifact's own rules (owner, mode, no symlink), before they are read;
  // an absent one is reported by its reader below.
  const auto check_file = [](const fs::path &file) {
    store::FileIdentity id;
    try {
      store::check_store_file_safe(file.string(), &id);
    } catch (const NotFoundError &) {
    }
    return id;
  };
  const store::FileIdentity checked_meta = check_file(entry_dir / store::kMetaFile);
  check_file(identity_file);
  fresh.meta = store::read_entry_meta(entry_dir);
  std::string identity_text;
  try {
    identity_text = store::read_file(identity_file);
  } catch (const NotFoundError &) {
    throw IntegrityError("store entry " + entry_dir.string() + " has no identity.json; republish or rebuild " + what);
  }
  nlohmann::json identity_json;
  try {
    identity_json = nlohmann::json::parse(identity_text);
  } catch (const nlohmann::json::parse_error &error) {
    throw IntegrityError("identity " + identity_file.string() + " is not valid JSON (" + error.what() +
                         "); republish or rebuild " + what);
  }
  fresh.identity = device::artifact_identity_from_json(identity_json, identity_file.string());
  if (meta_id) {
    fresh.meta_id = checked_meta;
    std::lock_guard<std::mutex> lock(cache_mutex);
    entries[entry_dir.string()] = fresh;
  }
  return fresh;
}

Resolution Runtime::State::resolve_in(std::size_t store_index, const std::string &consumer, const std::string &name,
                                      bool *consumer_seen, std::vector<std::string> *known) const {
  const store::StoreLocation &location = locations.at(store_index);
  const store::ConsumerLayout layout(location.root, consumer);
  const auto manifest = this->manifest(layout);
  if (!manifest) return {};
  if (consumer_seen != nullptr) *consumer_seen = true;
  const auto found = manifest->artifacts.find(name);
  if (found == manifest->artifacts.end()) {
    if (known != nullptr) {
      for (const auto &item : manifest->artifacts) known->push_back(item.first);
    }
    return {};
  }
  const store::ManifestRecord &record = found->second;
  Resolution resolution;
  resolution.consumer = consumer;
  resolution.name = name;
  resolution.content_key = record.content_key;
  resolution.input_key = record.input_key;
  resolution.kind = record.kind;
  resolution.updated = record.updated;
  resolution.store_root = location.root.string();
  resolution.store_writable = location.writable;
  const fs::path entry_dir = layout.entry(record.content_key);
  resolution.entry_dir = entry_dir.string();
  const State::CachedEntry entry = this->entry(entry_dir, consumer + "/" + name);
  if (entry.meta.content_key != record.content_key) {
    throw IntegrityError("store entry " + entry_dir.string() + " says content key " + entry.meta.content_key +
                         " but sits under " + record.content_key + ": the store was altered; republish " + consumer +
                         "/" + name);
  }
  resolution.file = (entry_dir / entry.meta.file).string();
  resolution.digest = entry.meta.digest;
  resolution.size = entry.meta.size;
  resolution.identity = entry.identity;
  resolution.images = entry.meta.images;
  resolution.kernels = entry.meta.kernels;
  if (resolution.kind != entry.meta.kind) {
    throw IntegrityError("manifest of " + consumer + " says " + name + " is a \"" + resolution.kind + "\" artifact but its entry " +
                         entry_dir.string() + " holds a \"" + entry.meta.kind + "\" one: the store was altered; republish or rebuild it");
  }
  return resolution;
}

Resolution Runtime::resolve(const std::string &consumer, const std::string &name) const {
  return state_->resolve(consumer, name);
}

const std::vector<DeviceIdentity> &Runtime::State::checked_devices() const {
  std::call_once(checked_once, [this] { checked = declared ? std::vector<DeviceIdentity>{*declared} : devices().effective(); });
  return checked;
}

Resolution Runtime::State::resolve(const std::string &consumer, const std::string &name) const {
  return *resolve_shared(consumer, name);
}

std::shared_ptr<const Resolution> Runtime::State::resolve_shared(const std::string &consumer, const std::string &name) const {
  store::validate_name("consumer", consumer);
  store::validate_name("artifact name", name);
  std::string key = consumer;
  key += '/';
  key += name;
  std::shared_ptr<const CachedResolution> cached;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    const auto hit = resolutions.find(key);
    if (hit != resolutions.end()) cached = hit->second;
  }
  if (cached) {
    bool current = true;
    for (std::size_t i = 0; current && i < cached->manifest_files.size(); ++i) {
      current = store::identify(cached->manifest_files[i].c_str()) == cached->manifest_ids[i];
    }
    if (current && store::identify(cached->meta_file.c_str()) == cached->meta_id) return cached->resolution;
  }

  // Every manifest's identity is taken before it is read: a change after that makes the
  // remembered identity stale, never the remembered resolution.
  auto fresh = std::make_shared<CachedResolution>();
  bool consumer_seen = false;
  std::vector<std::string> known;
  for (std::size_t index = 0; index < locations.size(); ++index) {
    fresh->manifest_files.push_back(store::ConsumerLayout(locations[index].root, consumer).manifest().string());
    fresh->manifest_ids.push_back(store::identify(fresh->manifest_files.back().c_str()));
    Resolution resolution = resolve_in(index, consumer, name, &consumer_seen, &known);
    if (resolution.content_key.empty()) continue;
    fresh->meta_file = (fs::path(resolution.entry_dir) / store::kMetaFile).string();
    const auto meta_id = store::identify(fresh->meta_file.c_str());
    fresh->resolution = std::make_shared<const Resolution>(std::move(resolution));
    if (meta_id) {
      fresh->meta_id = *meta_id;
      std::lock_guard<std::mutex> lock(cache_mutex);
      resolutions[key] = fresh;
    }
    return fresh->resolution;
  }
  if (!consumer_seen) {
    throw NotFoundError("no consumer \"" + consumer + "\" in any store (searched " + searched(infos) +
                        "): publish or build one of its artifacts first, or add its store to KILN_STORE_PATH");
  }
  std::string list;
  for (const auto &item : known) list += (list.empty() ? "" : ", ") + item;
  throw NotFoundError("no artifact \"" + name + "\" in consumer \"" + consumer + "\" (it has: " +
                      (list.empty() ? "nothing" : list) + "; searched " + searched(infos) + ")");
}

Compatibility Runtime::check(const Resolution &resolution, const DeviceIdentity *device) const {
  return check_compatibility(resolution.identity, HostRequirements::current(), device);
}

Module Runtime::load(const std::string &consumer, const std::string &name, const LoadOptions &options) const {
  const auto start = Clock::now();
  Resolution resolution = resolve(consumer, name);
  return load_resolved(std::move(resolution), options, ms_since(start));
}

Module Runtime::load_resolved(Resolution resolution, const LoadOptions &options, double resolve_ms) const {
  LoadReport report;
  report.timings.resolve_ms = resolve_ms;
  report.resolution = std::move(resolution);
  const Resolution &r = report.resolution;
  const std::string what = r.consumer + "/" + r.name;
  if (r.kind != "plugin") {
    throw UsageError(what + " is a \"" + r.kind + "\" artifact (device images), not a plugin: load it with "
                     "Runtime::load_kernels (kiln load lists its kernels)");
  }
  const std::vector<DeviceIdentity> effective = state_->check_devices();  // discovery (once) is not timed
  const auto start = Clock::now();
  if (options.device >= 0) {
    if (static_cast<std::size_t>(options.device) >= effective.size()) {
      throw NotFoundError("device " + std::to_string(options.device) + " does not exist: " +
                          std::to_string(effective.size()) + " device(s) present (" + devices().detail + ")");
    }
    report.device = effective[static_cast<std::size_t>(options.device)];
  } else if (!effective.empty()) {
    report.device = effective.front();
  }
  report.compatibility = check(r, report.device ? &*report.device : nullptr);
  if (!report.compatibility.ok) {
    throw IncompatibleError("artifact " + what + " (" + r.content_key + ") on " +
                                (report.device ? report.device->label() : std::string("this host")),
                            report.compatibility.reasons);
  }
  if (!report.device && !r.identity.archs.empty()) {
    log(LogLevel::warning, what + ": no CUDA device (" + devices().detail +
                               "); its device code was not checked and only host-side calls will work");
  }
  report.timings.check_ms = ms_since(start);
  // Kernels a plugin asks for (kiln.host.kernels/1) come from this Runtime's stores; the source
  // holds the State, so it outlives the Runtime as long as the plugin needs it.
  std::shared_ptr<const State> state = state_;
  load::KernelSource kernels = [state](const std::string &consumer, const std::string &name, int device) {
    return state->load_images_on(consumer, name, device);
  };
  return Loader::open(std::move(report), options.abi_required, state_->options.log, std::move(kernels));
}

std::vector<ArtifactSummary> Runtime::list(const std::string &consumer) const {
  if (!consumer.empty()) store::validate_name("consumer", consumer);
  std::vector<ArtifactSummary> out;
  std::set<std::string> seen;  // consumer/name already found in an earlier layer
  for (const auto &location : state_->locations) {
    std::vector<std::string> consumers;
    if (!consumer.empty()) {
      consumers.push_back(consumer);
    } else {
      boost::system::error_code error;
      for (fs::directory_iterator it(location.root / "consumers", error), end; !error && it != end;
           it.increment(error)) {
        const std::string item = it->path().filename().string();
        if (store::is_valid_name(item)) consumers.push_back(item);
      }
      std::sort(consumers.begin(), consumers.end());
    }
    for (const auto &each : consumers) {
      const store::ConsumerLayout layout(location.root, each);
      const auto manifest = store::read_manifest(layout.manifest(), each);
      if (!manifest) continue;
      for (const auto &[name, record] : manifest->artifacts) {
        const bool shadowed = !seen.insert(each + "/" + name).second;
        out.push_back({each, name, record.content_key, record.kind, location.root.string(), location.writable,
                       shadowed, record.updated});
      }
    }
  }
  return out;
}

}  // namespace kiln
