// kiln: what identifies a device, an artifact, and the running kiln; the compatibility rule.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/errors.hpp>

namespace kiln {

// A target architecture as nvcc names it: SASS "sm_90", "sm_90a", "sm_100f" or PTX "compute_90".
struct Arch {
  enum class Kind { sass, ptx };
  Kind kind = Kind::sass;
  int major = 0;
  int minor = 0;
  char suffix = '\0';  // '\0', 'a' (arch-specific: exact CC only) or 'f' (family: same major, minor >= ours)

  // Throws UsageError naming text and the accepted forms.
  static Arch parse(std::string_view text);
  // "sm_90,compute_90" → two archs; empty items are refused.
  static std::vector<Arch> parse_list(std::string_view comma_list);
  std::string to_string() const;
  int cc() const { return major * 10 + minor; }
  friend bool operator==(const Arch &a, const Arch &b) {
    return a.kind == b.kind && a.major == b.major && a.minor == b.minor && a.suffix == b.suffix;
  }
  friend bool operator!=(const Arch &a, const Arch &b) { return !(a == b); }
};

// What the CUDA Driver API says of one GPU (or what KILN_DEVICE declares).
struct DeviceIdentity {
  int ordinal = 0;
  std::string name;
  std::string uuid;          // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"; empty when declared
  int cc_major = 0;
  int cc_minor = 0;
  int driver_version = 0;    // cuDriverGetVersion, e.g. 13000
  bool integrated = false;   // Tegra / iGPU: SASS must match the arch exactly
  int sm_count = 0;
  std::uint64_t total_memory = 0;  // bytes
  std::string pci_bus_id;    // "0000:17:00.0"
  int pci_device_id = 0;     // CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
  bool declared = false;     // from KILN_DEVICE, not from a driver

  std::string arch_name() const;  // "sm_90"
  std::string label() const;      // "device 0 (NVIDIA H200, sm_90)", ", declared" when declared
};

enum class DriverState {
  ok,            // driver loaded, cuInit succeeded, at least one device
  no_driver,     // libcuda.so.1 not found
  stub_library,  // the toolkit's link stub answered (CUDA_ERROR_STUB_LIBRARY)
  no_device,     // driver fine, zero devices (or CUDA_ERROR_NO_DEVICE)
  init_failed,   // cuInit or a query failed otherwise
};
const char *to_string(DriverState state);

// Everything kiln knows about the devices of this process.
struct DeviceReport {
  DriverState state = DriverState::no_driver;
  std::string detail;         // human-readable: which library, which error
  std::string library;        // path or soname of the driver opened
  int driver_version = 0;
  std::vector<DeviceIdentity> devices;        // live devices
  std::optional<DeviceIdentity> declared;     // from KILN_DEVICE
  // The devices checks use: the declared one when set (it overrides), else the live ones.
  std::vector<DeviceIdentity> effective() const;
};

// Parse "sm_87" or "sm_87,driver=12060,integrated=1,name=Orin,sm_count=16,memory=8G".
// Throws UsageError naming the text and the form.
DeviceIdentity parse_declared_device(std::string_view text);

// A robot model a plugin was generated from (kiln-urdf-fk): the fingerprint of the URDF as parsed,
// with the chain and the generators' versions, and the chain it was cut to.
struct RobotModel {
  std::string fingerprint;  // "xxh128:<32 hex digits>", as kiln-urdf-fk --check prints it
  std::string chain;        // "<base link> -> <tip link>"
  friend bool operator==(const RobotModel &a, const RobotModel &b) {
    return a.fingerprint == b.fingerprint && a.chain == b.chain;
  }
  friend bool operator!=(const RobotModel &a, const RobotModel &b) { return !(a == b); }
};

// The canonical texts of the robot models a plugin file was generated from (its .kiln.model
// section), in the order identity.json records their fingerprints: what kiln-urdf-fk --check
// --model-text prints for the same URDF and chain. Empty for a file not generated from one.
// IntegrityError naming the file for a damaged section; IoError when it cannot be read.
std::vector<std::string> robot_model_texts(const std::string &plugin_file);

// What an artifact records beside itself (identity.json) and checks at load.
struct ArtifactIdentity {
  int key_schema = 0;
  int artifact_schema = 0;
  std::uint32_t abi_version = 0;   // plugin ABI (major << 16 | minor); 0 for device images
  std::vector<Arch> archs;         // empty: host-only code
  int cuda_toolkit_version = 0;    // CUDA version that wrote any PTX (e.g. 13000)
  // Provenance (nvcc version, host compiler, generator hashes...): keys the build, not checked.
  std::map<std::string, std::string> provenance;
  // The robot models its code was generated from, backed by the file's own .kiln.model section
  // (ordered by fingerprint; empty: none). A host that requires a model checks it before dlopen.
  std::vector<RobotModel> models;
};

// What the running kiln requires.
struct HostRequirements {
  int key_schema = 0;
  int artifact_schema = 0;
  std::uint32_t abi_version = 0;   // host's ABI; majors must match
  std::uint32_t abi_required = 0;  // lowest ABI (same major) the host accepts
  static HostRequirements current();  // this build of kiln
};

struct Compatibility {
  bool ok = false;
  std::optional<Arch> image;  // the image the device would run; empty for host-only or refusal
  std::string how;            // "exact SASS sm_90", "PTX compute_80 compiled by the driver", ...
  std::vector<Reason> reasons;  // every refusal reason, field by field (empty when ok)
};

// docs/architecture.md §5 as a pure function. device == nullptr checks only the host side (schemas, ABI).
Compatibility check_compatibility(const ArtifactIdentity &artifact, const HostRequirements &host,
                                  const DeviceIdentity *device);

}  // namespace kiln
