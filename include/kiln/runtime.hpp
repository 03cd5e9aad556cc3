// kiln: the runtime — stores, devices, resolve, check, load, publish, list.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/identity.hpp>
#include <kiln/log.hpp>
#include <kiln/module.hpp>

namespace kiln {

// Each concern's types live in its own header; include the ones you use (<kiln/kiln.hpp> has all).
struct ArtifactSummary;   // <kiln/store.hpp>
struct StoreInfo;         // <kiln/store.hpp>
struct Recipe;            // <kiln/recipe.hpp>
struct BuildOptions;      // <kiln/recipe.hpp>
struct BuildPlan;         // <kiln/recipe.hpp>
struct BuildResult;       // <kiln/recipe.hpp>
class KernelLibrary;      // <kiln/kernels.hpp>
struct DeviceKernels;     // <kiln/kernels.hpp>
struct DeviceLoadOptions; // <kiln/kernels.hpp>
struct KernelLoadReport;  // <kiln/kernels.hpp>
struct ToolchainReport;   // <kiln/toolchain.hpp>
struct VerifyOptions;     // <kiln/verify.hpp>
struct VerifyReport;      // <kiln/verify.hpp>
struct GcOptions;         // <kiln/gc.hpp>
struct GcReport;          // <kiln/gc.hpp>
struct ExportRequest;     // <kiln/bundle.hpp>
struct ExportReport;      // <kiln/bundle.hpp>
struct ImportRequest;     // <kiln/bundle.hpp>
struct ImportReport;      // <kiln/bundle.hpp>
struct TrustStatus;       // <kiln/keys.hpp>
struct TrustRequest;      // <kiln/keys.hpp>
struct RemoteStatus;      // <kiln/remote.hpp>
struct RemoteTransfer;    // <kiln/remote.hpp>

struct RuntimeOptions {
  // Read-only layers, searched first, in order; then the writable cache.
  std::vector<std::string> read_only_stores;
  std::string cache_dir;                       // empty: from environment
  std::optional<std::string> declared_device;  // "sm_87[,driver=...]": overrides live devices for checks
  LogCallback log;

  // KILN_STORE_PATH, KILN_CACHE_DIR / XDG_CACHE_HOME / HOME, KILN_DEVICE.
  static RuntimeOptions from_environment();
};

// The robot model a plugin must have been generated from.
struct ModelRequirement {
  // "xxh128:<32 hex digits>": what kiln-urdf-fk --check prints for the robot's URDF and chain (a
  // generated header's kModelFingerprint). Empty: no requirement.
  std::string fingerprint;
  // Optional: the canonical text it digests (kiln-urdf-fk --check --model-text), so that a
  // refusal names the first link or joint where the plugin's model and this one differ.
  std::string text;
};

struct LoadOptions {
  // Index into the effective devices (declared or live) to check against; -1: the first.
  int device = -1;
  // Lowest plugin ABI accepted (same major as kiln's); 0: kiln's default (major.0).
  std::uint32_t abi_required = 0;
  // A plugin whose recorded robot models do not include this one (or that records none) is
  // refused before its code is loaded: IncompatibleError, field "robot_model".
  ModelRequirement model;
};

struct PublishRequest {
  std::string consumer;
  std::string name;
  std::string artifact_file;     // a kiln plugin (.so) built elsewhere
  // What its device code targets; each must be held by the file's fat binaries (else an
  // IntegrityError listing what the file holds). Empty: the archs the file holds, host-only
  // for a file with no device code.
  std::vector<Arch> archs;
  int cuda_toolkit_version = 0;  // toolkit that wrote its PTX; 0: the one kiln was built with
  std::map<std::string, std::string> provenance;
  bool host_only = false;  // with no archs: refuse (IntegrityError) a file that holds device code

  // archs and host_only from the one text form the CLI's --arch and Python's archs= take:
  // "sm_90[,sm_87,compute_90]", "none" (host-only), or empty (the archs the file holds).
  // UsageError naming the text for anything else.
  void set_archs(std::string_view text);
};

struct PublishResult {
  std::string content_key;
  std::string entry_dir;
  std::string file;
  bool reused = false;  // an identical entry existed; only the manifest changed
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
  // The plugin may ask the host for device kernels ("kiln.host.kernels/1",
  // abi/kiln/ext/host_kernels.h): they are loaded through this Runtime's stores, cached per
  // (consumer, name, device) and kept loaded until the Module and its last Instance are gone
  // (even when the Runtime is destroyed first).
  Module load(const std::string &consumer, const std::string &name, const LoadOptions &options = {}) const;
  // The entry content_key of consumer in the first store holding it, whether or not a manifest
  // still names it (an older version to swap back to); `name` labels it where no manifest
  // does. Runs no artifact code. NotFoundError when no store has it, UsageError for a bad key.
  Resolution resolve_entry(const std::string &consumer, const std::string &name, const std::string &content_key) const;
  // load() of that entry: the same checks, verification and refusals.
  Module load_entry(const std::string &consumer, const std::string &name, const std::string &content_key,
                    const LoadOptions &options = {}) const;

  // Device-image artifacts (kind "images": cubins per arch, PTX, a fatbin -- what an "nvrtc"
  // recipe builds): resolve -> check (schemas; the image the device runs, docs/architecture.md §5, and why) ->
  // verify (store safety; the chosen image file read once, its recorded digest and its structure
  // checked on exactly the bytes then handed to the driver; a later load of the same unchanged
  // file -- same inode, size, mtime, ctime -- reuses those verified bytes) -> cuLibraryLoadData ->
  // resolve EVERY listed kernel, so a wrong-arch or damaged image is refused here, never at a launch.
  // KernelLibrary::kernel()/function() take the lowered name or the recipe's name expression.
  // `device`: a device ordinal, -1 for device 0. A declared device (KILN_DEVICE) stands in for
  // the check as for plugins; the driver then loads on the live device of that ordinal (and
  // refuses a mismatch at kernel lookup). Typed errors as load(): UsageError (a plugin
  // artifact), NotFoundError, IncompatibleError (reasons per field), IntegrityError (digest,
  // damaged image, store safety), Error (no driver or device; the driver's words).
  // report (optional) receives the resolution, the choice per device and the timings.
  KernelLibrary load_kernels(const std::string &consumer, const std::string &name, int device = -1,
                             KernelLoadReport *report = nullptr) const;
  // The same on every device (options.device_ordinal: one), each with its own image choice;
  // options.skip_unusable: devices that cannot load it are listed in report->skipped and
  // DeviceKernels::skipped instead of throwing (unless none can).
  DeviceKernels load_kernels_all(const std::string &consumer, const std::string &name) const;
  DeviceKernels load_kernels_all(const std::string &consumer, const std::string &name,
                                 const DeviceLoadOptions &options, KernelLoadReport *report = nullptr) const;
  // build(recipe) on miss (an "nvrtc" recipe), then load_kernels of exactly what was built;
  // where NVRTC is absent (ToolchainMissingError), the prepared artifact of the recipe's
  // consumer/name (logged). Every other build failure is thrown as it is.
  KernelLibrary ensure_kernels(const Recipe &recipe);
  KernelLibrary ensure_kernels(const Recipe &recipe, const BuildOptions &build_options, int device = -1,
                               KernelLoadReport *report = nullptr);

  // Put a prebuilt plugin file into the writable cache under consumer/name.
  PublishResult publish(const PublishRequest &request);

  // Build on miss (recipe.hpp). plan has no side effect; build builds at most once across
  // processes (per input key) and publishes into the writable cache; ensure = build, then
  // load what was built. Where no toolchain exists (ToolchainMissingError: no nvcc, or no
  // NVRTC for an "nvrtc" recipe), ensure loads the prepared artifact of the recipe's
  // consumer/name (a robot without nvcc) and says so in the log; every other build failure
  // is thrown as it is. plan's state is "stale" with a reason per differing field when the
  // writable store holds consumer/name built from other inputs.
  // (The overloads without options take the defaults.)
  BuildPlan plan(const Recipe &recipe) const;
  BuildPlan plan(const Recipe &recipe, const BuildOptions &options) const;
  BuildResult build(const Recipe &recipe);
  BuildResult build(const Recipe &recipe, const BuildOptions &options);
  Module ensure(const Recipe &recipe);
  Module ensure(const Recipe &recipe, const BuildOptions &build_options, const LoadOptions &load_options = {});
  // (For "nvrtc" recipes use ensure_kernels.)

  // The build toolchain, found as a build finds it: nvcc and the host compiler (their
  // --version run, remembered in memory only: nothing is written), NVRTC, nvJitLink and
  // nvFatbin. Never throws: what is missing says why in its detail.
  ToolchainReport toolchain() const;

  // Every artifact of consumer (all consumers when empty), in store order.
  std::vector<ArtifactSummary> list(const std::string &consumer = "") const;

  // kiln verify (kiln/verify.hpp): checks every store (or options.store_dir) as loads and
  // builds would, repairing what can be repaired without loss when asked. Findings are the
  // result, not errors: it throws only for bad options (a store_dir that is no directory).
  VerifyReport verify() const;
  VerifyReport verify(const VerifyOptions &options) const;
  // kiln gc (kiln/gc.hpp): evicts from the writable cache down to the options' limits.
  // UsageError without a limit; IoError when another gc runs on the cache.
  GcReport gc(const GcOptions &options) const;
  // Bundles (kiln/bundle.hpp). export_bundle writes the chosen artifacts of a consumer, as the
  // stores resolve them, into one file (signed with request.signing_key when given): refuses a
  // damaged entry (IntegrityError) or an unknown name (NotFoundError). import_bundle checks the
  // signature against request.trusted_keys before reading anything else, then every member
  // against the index, stages every entry, and only when the whole bundle verified commits
  // them and their manifest records (into request.into, else the writable cache). Idempotent:
  // an intact entry already there is kept ("already present"). A bundle cut short, tampered
  // with, badly signed, unsigned where a key is trusted or holding anything the index does not
  // list is refused (IntegrityError; UsageError for an unsigned bundle with no trusted key and
  // without allow_unsigned) and leaves no entry, staging
  // directory or manifest change behind.
  ExportReport export_bundle(const ExportRequest &request) const;
  ImportReport import_bundle(const ImportRequest &request);

  // Key lists (kiln/keys.hpp). trust_status: the root the stores pin and the newest list they
  // accepted (a damaged list, or stores pinning two roots: IntegrityError / UsageError). trust
  // pins request.root in the writable cache (or request.into) and/or accepts request.key_list
  // when it chains from the pinned root and is newer than what is held; a list of a lower
  // generation or another root is refused (IntegrityError), another root than the pinned one
  // too (UsageError).
  TrustStatus trust_status() const;
  TrustStatus trust(const TrustRequest &request);

  // Remote caches (kiln/remote.hpp). remote_status reads the configuration and asks each
  // remote for a round trip (UsageError for a malformed configuration). remote_push uploads
  // the named artifacts of consumer (every artifact it has when names is empty), as the stores
  // resolve them, to every read-write remote: signed with the configured key, each entry's
  // files checked against their digests first. A remote that fails is a transfer whose status
  // says why, not an error; NotFoundError for an unknown name, UsageError when no remote is
  // configured. (Pulling is a build that only a remote may serve: BuildOptions::remote_only.)
  RemoteStatus remote_status() const;
  std::vector<RemoteTransfer> remote_push(const std::string &consumer, const std::vector<std::string> &names = {}) const;

  void log(LogLevel level, const std::string &message) const;

  struct State;  // implementation detail (src/runtime/state.hpp)

 private:
  Module load_resolved(Resolution resolution, const LoadOptions &options, double resolve_ms) const;
  // Build the recipe or, where no toolchain exists, take the prepared artifact of its
  // consumer/name (*prepared = true): the resolution to load.
  Resolution built_or_prepared(const Recipe &recipe, const BuildOptions &options, bool *prepared);

  // Shared: a loaded plugin's kernel service keeps using it after the Runtime is gone.
  std::shared_ptr<State> state_;
};

}  // namespace kiln
