// kiln: a loaded plugin (Module) and its instances (Instance).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/placement.hpp>
#include <kiln/plugin.h>

namespace kiln {
namespace load {
class ReportPool;  // kiln's loader's, opaque here
}  // namespace load

// One image file of a device-image artifact (its entry's meta.json "images").
struct ArtifactImage {
  std::string file;            // name inside the entry directory: "sm_90.cubin", "compute_90.ptx", "images.fatbin"
  std::string kind;            // "cubin", "ptx" or "fatbin"
  Arch arch;                   // sm_XY for a cubin, compute_XY for PTX; a fatbin: its first arch
  std::vector<Arch> contains;  // fatbin only: every arch inside it
  std::string digest;          // XXH3-128 of the file, checked before the driver sees its bytes
  std::uint64_t size = 0;
};

// A kernel a device-image artifact provides: the name expression it was built from and the
// name the driver knows it by (NVRTC's lowered name; equal for extern "C" kernels).
struct ArtifactKernel {
  std::string name;
  std::string lowered_name;
};

// The kinds of artifact (Resolution::kind, a manifest record's and a bundle entry's kind): a
// plugin, which Runtime::load binds, or device images (cubins per arch, PTX, a fatbin), which
// Runtime::load_kernels loads. Compare kinds with these, never with other spellings.
inline constexpr const char kKindPlugin[] = "plugin";
inline constexpr const char kKindImages[] = "images";

// Where an artifact was found and what its entry records. Produced by Runtime::resolve
// without running any of the artifact's code.
struct Resolution {
  std::string consumer;
  std::string name;
  std::string content_key;
  std::string input_key;      // empty for published artifacts
  std::string kind;           // kKindPlugin or kKindImages (device images: load with Runtime::load_kernels)
  std::string store_root;
  bool store_writable = false;
  std::string entry_dir;
  std::string file;           // absolute path of the artifact file (images: the image index)
  std::string digest;         // XXH3-128 recorded at publish
  std::uint64_t size = 0;
  std::string updated;        // manifest time stamp
  ArtifactIdentity identity;  // identity.json
  std::vector<ArtifactImage> images;    // kind "images": every image file of the entry
  std::vector<ArtifactKernel> kernels;  // kind "images": every kernel a load resolves
};

// Milliseconds spent in each step of Runtime::load.
struct LoadTimings {
  double resolve_ms = 0;  // stores, manifest, meta.json, identity.json
  double check_ms = 0;    // compatibility with kiln and the device (device discovery excluded)
  double verify_ms = 0;   // store safety + digest of the file
  double dlopen_ms = 0;
  double bind_ms = 0;     // negotiation, answer and stamp checks
  double total_ms() const { return resolve_ms + check_ms + verify_ms + dlopen_ms + bind_ms; }
};

struct LoadReport {
  Resolution resolution;
  Compatibility compatibility;
  std::optional<DeviceIdentity> device;  // the device checked against; empty: none present
  std::uint32_t abi_version = 0;         // negotiated
  std::string plugin_id;
  std::string plugin_version;
  std::vector<std::string> interfaces;
  LoadTimings timings;
};

class Module;

// One plugin instance: create -> activate -> interface calls -> deactivate -> destroy (RAII).
// Keeps its Module's code mapped while it lives.
class Instance {
 public:
  Instance(Instance &&) noexcept;
  Instance &operator=(Instance &&) noexcept;
  ~Instance();  // deactivates and destroys; a plugin throwing there is logged, never fatal

  // [setup-thread] device_ordinal -1 = host only. Throws AbiError with the plugin's message
  // (kiln::Error of kind other for KILN_ERR_DEVICE); an exception escaping the plugin is an AbiError.
  void activate(int device_ordinal, std::uint32_t max_batch);
  // [setup-thread] The same, placed (include/kiln/placement.hpp): in a partition, the partition's
  // context is current on this thread while the plugin's activate, deactivate and destroy run, and
  // the instance holds the partition. Refused before the plugin runs: a placement of a host-only
  // instance or on another device than the partition's, a priority outside the device's range
  // (UsageError), a plugin that speaks ABI 1.0 (AbiError). Refused after: an activate that
  // returned with another context current (AbiError; the instance is deactivated).
  void activate(const ActivateOptions &options);
  void deactivate() noexcept;
  bool active() const noexcept { return active_; }

  // The interface table for id ("kiln.example/1"), or nullptr when not offered. Interface
  // tables begin with struct_size; a table smaller than min_size is refused (AbiError), since
  // reading past it would read foreign memory. Pass the first revision's size once T has grown
  // (abi/README.md "Interfaces"), and check struct_size before using a function appended later.
  // A plugin that throws from get_interface gives an AbiError naming it.
  template <class T>
  const T *interface(const char *id, std::size_t min_size = sizeof(T)) const {
    return static_cast<const T *>(interface_table(id, min_size));
  }
  const void *interface_table(const char *id, std::size_t min_size) const;

  kiln_instance *handle() const noexcept { return instance_; }

  struct Library;  // the loaded shared object; defined by kiln's loader, opaque here

 private:
  friend class Module;
  Instance(std::shared_ptr<Library> library, kiln_instance *instance);
  std::shared_ptr<Library> library_;
  kiln_instance *instance_ = nullptr;
  bool active_ = false;
  std::shared_ptr<const GpuPartition> partition_;  // where it was activated; empty: no partition
};

// A loaded, negotiated plugin. Unloads (dlclose) when it and all its Instances are gone.
class Module {
 public:
  Module(Module &&) noexcept;
  Module &operator=(Module &&) noexcept;
  ~Module();

  const LoadReport &report() const noexcept;
  // The plugin's entry table as the host holds it: a copy filled up to the plugin's struct_size
  // (which it reports, at most the host's sizeof); fields beyond it are NULL (absent).
  const kiln_plugin_entry &entry() const noexcept;
  std::uint32_t abi_version() const noexcept;

  // [setup-thread] Keep this plugin's code mapped for the rest of the process, even once the
  // Module and its Instances are gone (its last dlclose then unloads nothing). For a plugin
  // whose device code the CUDA runtime registered at load (an embedded fatbin): unloading it
  // leaves the runtime pointing into unmapped memory (abi/README.md "Swap-safe plugins").
  void keep_mapped() const;

  // [setup-thread] Create an instance. Throws AbiError with the plugin's message (or naming the
  // exception that escaped its create).
  Instance create_instance() const;

 private:
  friend class Runtime;
  friend class Loader;
  Module(std::shared_ptr<Instance::Library> library, std::unique_ptr<LoadReport> report);
  std::shared_ptr<Instance::Library> library_;
  std::unique_ptr<LoadReport> report_;
  // Where the report goes when the Module ends: back to its Runtime, for that Runtime's next
  // load of the same artifact (src/load/report_pool.hpp); none: freed.
  std::shared_ptr<load::ReportPool> report_pool_;
  std::uint64_t report_serial_ = 0;
  int report_device_ = 0;
};

}  // namespace kiln
