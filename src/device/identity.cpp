// kiln: device identities, the driver states, the device report and the running kiln's
// requirements (include/kiln/identity.hpp). Arch names: arch.cpp; declared devices:
// declared_device.cpp; live devices: discover.cpp.
#include <string>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/version.hpp>

namespace kiln {

std::string DeviceIdentity::arch_name() const {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

std::string DeviceIdentity::label() const {
  return "device " + std::to_string(ordinal) + " (" + name + ", " + arch_name() + (declared ? ", declared" : "") + ")";
}

const char *to_string(DriverState state) {
  switch (state) {
    case DriverState::ok: return "ok";
    case DriverState::no_driver: return "no_driver";
    case DriverState::stub_library: return "stub_library";
    case DriverState::no_device: return "no_device";
    case DriverState::init_failed: return "init_failed";
  }
  return "unknown";
}

std::vector<DeviceIdentity> DeviceReport::effective() const {
  if (declared) return {*declared};
  return devices;
}

HostRequirements HostRequirements::current() {
  HostRequirements host;
  host.key_schema = kKeySchema;
  host.artifact_schema = kArtifactSchema;
  host.abi_version = kAbiVersion;
  host.abi_required = KILN_ABI_MAKE_VERSION(KILN_ABI_VERSION_MAJOR_OF(kAbiVersion), 0);
  return host;
}

}  // namespace kiln
