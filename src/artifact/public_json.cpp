// include/kiln/json.hpp: the JSON forms kiln writes itself (artifact/identity_json.hpp), offered
// to hosts and the CLI.
#include <kiln/json.hpp>

#include "artifact/identity_json.hpp"

namespace kiln {

nlohmann::json to_json(const DeviceIdentity &device) { return artifact::to_json(device); }
nlohmann::json to_json(const DeviceReport &report) { return artifact::to_json(report); }
nlohmann::json to_json(const ArtifactIdentity &artifact) { return artifact::to_json(artifact); }
nlohmann::json to_json(const Compatibility &compatibility) { return artifact::to_json(compatibility); }
nlohmann::json to_json(const Reason &reason) { return artifact::to_json(reason); }

}  // namespace kiln
