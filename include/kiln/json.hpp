// kiln: JSON forms of the public identity and remote-cache types, as identity.json records them
// and as kiln's --json output prints them. Keys are snake_case; archs are written as their names ("sm_90").
#pragma once

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/identity.hpp>
#include <kiln/remote.hpp>

namespace kiln {

nlohmann::json to_json(const DeviceIdentity &device);
nlohmann::json to_json(const DeviceReport &report);
nlohmann::json to_json(const ArtifactIdentity &artifact);
nlohmann::json to_json(const Compatibility &compatibility);
nlohmann::json to_json(const Reason &reason);
nlohmann::json to_json(const RemoteStatus &status);
nlohmann::json to_json(const RemoteTransfer &transfer);

}  // namespace kiln
