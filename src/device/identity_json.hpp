// kiln internal: JSON forms of device and artifact identities (identity.json, `kiln device`).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <kiln/identity.hpp>

namespace kiln::device {

// Keys are snake_case; archs are written as their names ("sm_90", "compute_90").
nlohmann::json to_json(const DeviceIdentity &device);
nlohmann::json to_json(const DeviceReport &report);
nlohmann::json to_json(const ArtifactIdentity &artifact);
nlohmann::json to_json(const Compatibility &compatibility);
nlohmann::json to_json(const Reason &reason);

// Reads what to_json(ArtifactIdentity) wrote. Throws IntegrityError naming source_for_errors
// (the file) and the field when a required field is missing or has the wrong type or value.
// Unknown keys are ignored; "provenance" is optional.
ArtifactIdentity artifact_identity_from_json(const nlohmann::json &json,
                                             const std::string &source_for_errors);

}  // namespace kiln::device
