// kiln internal: JSON forms of device and artifact identities (identity.json, `kiln device`).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <kiln/identity.hpp>

namespace kiln::artifact {

// Keys are snake_case; archs are written as their names ("sm_90", "compute_90"). Write them
// with support::dump_json (bytes that are not UTF-8, e.g. in a provenance path, must not throw).
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
// identity.json's text (bytes that are not UTF-8, e.g. a Latin-1 recipe path in provenance,
// become U+FFFD: provenance is informative only).
std::string identity_file_text(const ArtifactIdentity &artifact);
// The same from identity.json's text: malformed JSON, nesting deeper than 64 or a number out of
// range are IntegrityError naming the file too.
ArtifactIdentity parse_artifact_identity(std::string_view text, const std::string &source_for_errors);

}  // namespace kiln::artifact
