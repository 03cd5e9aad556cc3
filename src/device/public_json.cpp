// include/kiln/json.hpp: the JSON forms kiln writes itself (device/identity_json.hpp), offered
// to hosts and the CLI.
#include <kiln/json.hpp>

#include "device/identity_json.hpp"

namespace kiln {

nlohmann::json to_json(const DeviceIdentity &device) { return device::to_json(device); }
nlohmann::json to_json(const DeviceReport &report) { return device::to_json(report); }
nlohmann::json to_json(const ArtifactIdentity &artifact) { return device::to_json(artifact); }
nlohmann::json to_json(const Compatibility &compatibility) { return device::to_json(compatibility); }
nlohmann::json to_json(const Reason &reason) { return device::to_json(reason); }

}  // namespace kiln
