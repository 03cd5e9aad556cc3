// kiln: JSON forms of the public identity types and of the remote-cache, store-maintenance and
// bundle reports, as identity.json records them and as kiln's --json output prints them. Keys
// are snake_case; archs are written as their names ("sm_90").
#pragma once

#include <nlohmann/json.hpp>

#include <kiln/bundle.hpp>
#include <kiln/errors.hpp>
#include <kiln/gc.hpp>
#include <kiln/identity.hpp>
#include <kiln/remote.hpp>
#include <kiln/verify.hpp>

namespace kiln {

nlohmann::json to_json(const DeviceIdentity &device);
nlohmann::json to_json(const DeviceReport &report);
nlohmann::json to_json(const ArtifactIdentity &artifact);
nlohmann::json to_json(const Compatibility &compatibility);
nlohmann::json to_json(const Reason &reason);
nlohmann::json to_json(const RemoteStatus &status);
nlohmann::json to_json(const RemoteTransfer &transfer);
nlohmann::json to_json(const VerifyReport &report);  // with damage_left, repaired and clean counted
nlohmann::json to_json(const StoreFinding &finding);
nlohmann::json to_json(const GcReport &report);
nlohmann::json to_json(const GcItem &item);
nlohmann::json to_json(const ExportReport &report);
nlohmann::json to_json(const ImportReport &report);

}  // namespace kiln
