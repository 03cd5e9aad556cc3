// kiln: the runtime — stores, devices, resolve, check, load, publish, list.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/identity.hpp>
#include <kiln/log.hpp>
#include <kiln/module.hpp>
#include <kiln/recipe.hpp>

namespace kiln {

struct StoreInfo {
  std::string root;
  bool writable = false;
  std::string origin;  // "KILN_STORE_PATH", "KILN_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "options"
};

struct RuntimeOptions {
  // Read-only layers, searched first, in order; then the writable cache.
  std::vector<std::string> read_only_stores;
  std::string cache_dir;                       // empty: from environment
  std::optional<std::string> declared_device;  // "sm_87[,driver=...]": overrides live devices for checks
  LogCallback log;

  // KILN_STORE_PATH, KILN_CACHE_DIR / XDG_CACHE_HOME / HOME, KILN_DEVICE.
  static RuntimeOptions from_environment();
};

struct LoadOptions {
  // Index into the effective devices (declared or live) to check against; -1: the first.
  int device = -1;
  // Lowest plugin ABI accepted (same major as kiln's); 0: kiln's default (major.0).
  std::uint32_t abi_required = 0;
};

struct PublishRequest {
  std::string consumer;
  std::string name;
  std::string artifact_file;     // a kiln plugin (.so) built elsewhere
  std::vector<Arch> archs;       // what its device code targets; empty: host-only
  int cuda_toolkit_version = 0;  // toolkit that wrote its PTX; 0: the one kiln was built with
  std::map<std::string, std::string> provenance;
};

struct PublishResult {
  std::string content_key;
  std::string entry_dir;
  std::string file;
  bool reused = false;  // an identical entry existed; only the manifest changed
};

struct ArtifactSummary {
  std::string consumer;
  std::string name;
  std::string content_key;
  std::string kind;
  std::string store_root;
  bool store_writable = false;
  bool shadowed = false;  // an earlier store layer has the same consumer/name
  std::string updated;
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = RuntimeOptions::from_environment());
  ~Runtime();
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  const std::vector<StoreInfo> &stores() const;
  // Device discovery runs once, on first use (cuInit costs 100-235 ms). Never throws.
  const DeviceReport &devices() const;

  // Find consumer/name: first store layer that has it. Runs no artifact code.
  Resolution resolve(const std::string &consumer, const std::string &name) const;
  // Compatibility of a resolved artifact with this kiln and a device (nullptr: none).
  Compatibility check(const Resolution &resolution, const DeviceIdentity *device) const;
  // resolve -> check -> verify digest -> dlopen -> negotiate and bind. Typed errors on refusal.
  Module load(const std::string &consumer, const std::string &name, const LoadOptions &options = {}) const;

  // Put a prebuilt plugin file into the writable cache under consumer/name.
  PublishResult publish(const PublishRequest &request);

  // Build on miss (recipe.hpp). plan has no side effect; build builds at most once across
  // processes (per input key) and publishes into the writable cache; ensure = build, then
  // load what was built. Where no toolchain exists, ensure loads the prepared artifact of
  // the recipe's consumer/name (a robot without nvcc) and says so in the log.
  BuildPlan plan(const Recipe &recipe, const BuildOptions &options = {}) const;
  BuildResult build(const Recipe &recipe, const BuildOptions &options = {});
  Module ensure(const Recipe &recipe, const BuildOptions &build_options = {}, const LoadOptions &load_options = {});

  // Every artifact of consumer (all consumers when empty), in store order.
  std::vector<ArtifactSummary> list(const std::string &consumer = "") const;

  void log(LogLevel level, const std::string &message) const;

  struct State;  // implementation detail (src/runtime/state.hpp)

 private:
  Resolution resolve_in(std::size_t store_index, const std::string &consumer, const std::string &name,
                        bool *consumer_seen, std::vector<std::string> *known) const;
  Module load_resolved(Resolution resolution, const LoadOptions &options, double resolve_ms) const;

  std::unique_ptr<State> state_;
};

}  // namespace kiln
