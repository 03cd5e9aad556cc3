// kiln internal: JSON forms of device and artifact identities.
#include "artifact/identity_json.hpp"

#include <cstdint>
#include <limits>

#include "support/json_read.hpp"
#include "support/json_write.hpp"

namespace kiln::artifact {
namespace {

[[noreturn]] void malformed(const std::string &source, const std::string &field,
                            const std::string &why) {
  throw IntegrityError(source + ": field \"" + field + "\" " + why +
                       "; the identity record is corrupt or was written by another kiln — "
                       "rebuild the artifact");
}

const nlohmann::json &required(const nlohmann::json &json, const char *field,
                               const std::string &source) {
  const auto found = json.find(field);
  if (found == json.end()) malformed(source, field, "is missing");
  return *found;
}

// A count or version: an integer in 0 ... 2^31-1 (1.9, "1", 2^32+1 and -5 are refused).
int read_int(const nlohmann::json &json, const char *field, const std::string &source) {
  const auto &value = required(json, field, source);
  if (!value.is_number_integer()) malformed(source, field, "is not an integer: " + support::describe_json(value));
  const auto number = support::checked_integer<int>(value, 0);
  if (!number) malformed(source, field, "is out of range (0 ... 2^31-1): " + support::describe_json(value));
  return *number;
}

}  // namespace

nlohmann::json to_json(const DeviceIdentity &device) {
  return nlohmann::json{
      {"ordinal", device.ordinal},
      {"name", device.name},
      {"uuid", device.uuid},
      {"arch", device.arch_name()},
      {"cc_major", device.cc_major},
      {"cc_minor", device.cc_minor},
      {"driver_version", device.driver_version},
      {"integrated", device.integrated},
      {"sm_count", device.sm_count},
      {"total_memory", device.total_memory},
      {"pci_bus_id", device.pci_bus_id},
      {"pci_device_id", device.pci_device_id},
      {"declared", device.declared},
  };
}

nlohmann::json to_json(const DeviceReport &report) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto &device : report.devices) devices.push_back(to_json(device));
  return nlohmann::json{
      {"state", to_string(report.state)},
      {"detail", report.detail},
      {"library", report.library},
      {"driver_version", report.driver_version},
      {"devices", std::move(devices)},
      {"declared", report.declared ? to_json(*report.declared) : nlohmann::json(nullptr)},
  };
}

nlohmann::json to_json(const ArtifactIdentity &artifact) {
  nlohmann::json archs = nlohmann::json::array();
  for (const auto &arch : artifact.archs) archs.push_back(arch.to_string());
  nlohmann::json provenance = nlohmann::json::object();
  for (const auto &[key, value] : artifact.provenance) provenance[key] = value;
  nlohmann::json json{
      {"key_schema", artifact.key_schema},
      {"artifact_schema", artifact.artifact_schema},
      {"abi_version", artifact.abi_version},
      {"archs", std::move(archs)},
      {"cuda_toolkit_version", artifact.cuda_toolkit_version},
      {"provenance", std::move(provenance)},
  };
  // Only where there are some: the records of plugins not generated from a robot model read as before.
  if (!artifact.models.empty()) {
    nlohmann::json models = nlohmann::json::array();
    for (const auto &model : artifact.models) models.push_back({{"fingerprint", model.fingerprint}, {"chain", model.chain}});
    json["models"] = std::move(models);
  }
  return json;
}

nlohmann::json to_json(const Reason &reason) {
  return nlohmann::json{{"field", reason.field},
                        {"recorded", reason.recorded},
                        {"current", reason.current},
                        {"note", reason.note}};
}

nlohmann::json to_json(const Compatibility &compatibility) {
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto &reason : compatibility.reasons) reasons.push_back(to_json(reason));
  return nlohmann::json{
      {"ok", compatibility.ok},
      {"image", compatibility.image ? nlohmann::json(compatibility.image->to_string())
                                    : nlohmann::json(nullptr)},
      {"how", compatibility.how},
      {"reasons", std::move(reasons)},
  };
}

ArtifactIdentity artifact_identity_from_json(const nlohmann::json &json,
                                             const std::string &source_for_errors) {
  const std::string &source = source_for_errors;
  if (!json.is_object()) {
    throw IntegrityError(source + ": an identity record must be a JSON object, not " +
                         std::string(json.type_name()) + "; rebuild the artifact");
  }
  ArtifactIdentity artifact;
  artifact.key_schema = read_int(json, "key_schema", source);
  artifact.artifact_schema = read_int(json, "artifact_schema", source);
  artifact.cuda_toolkit_version = read_int(json, "cuda_toolkit_version", source);

  const auto &abi = required(json, "abi_version", source);
  const auto abi_version = support::checked_integer<std::uint32_t>(abi);
  if (!abi_version) malformed(source, "abi_version", "is not an unsigned 32-bit number: " + support::describe_json(abi));
  artifact.abi_version = *abi_version;

  const auto &archs = required(json, "archs", source);
  if (!archs.is_array()) malformed(source, "archs", "is not an array of arch names");
  for (std::size_t i = 0; i < archs.size(); ++i) {
    const std::string field = "archs[" + std::to_string(i) + "]";
    if (!archs[i].is_string()) malformed(source, field, "is not a string: " + support::describe_json(archs[i]));
    try {
      artifact.archs.push_back(Arch::parse(archs[i].get<std::string>()));
    } catch (const UsageError &error) {
      malformed(source, field, std::string("is not an arch: ") + error.what());
    }
  }

  const auto models = json.find("models");
  if (models != json.end() && !models->is_null()) {
    if (!models->is_array()) malformed(source, "models", "is not an array of robot models");
    for (std::size_t i = 0; i < models->size(); ++i) {
      const nlohmann::json &item = (*models)[i];
      const std::string field = "models[" + std::to_string(i) + "]";
      if (!item.is_object()) malformed(source, field, "is not an object: " + support::describe_json(item));
      RobotModel model;
      for (auto [name, value] : {std::pair<const char *, std::string *>{"fingerprint", &model.fingerprint},
                                 std::pair<const char *, std::string *>{"chain", &model.chain}}) {
        const auto found = item.find(name);
        if (found == item.end() || !found->is_string()) malformed(source, field + "." + name, "is not a string");
        *value = found->get<std::string>();
      }
      artifact.models.push_back(std::move(model));
    }
  }

  const auto provenance = json.find("provenance");
  if (provenance != json.end() && !provenance->is_null()) {
    if (!provenance->is_object()) malformed(source, "provenance", "is not an object");
    // Provenance is informational: other values are kept as a short description (a scalar's
    // JSON spelling), never a recursive dump of what the file holds.
    for (const auto &[key, value] : provenance->items()) {
      artifact.provenance[key] = value.is_string() ? value.get<std::string>() : support::describe_json(value);
    }
  }
  return artifact;
}

std::string identity_file_text(const ArtifactIdentity &artifact) {
  return support::dump_json(to_json(artifact), 2) + "\n";
}

ArtifactIdentity parse_artifact_identity(std::string_view text, const std::string &source_for_errors) {
  const nlohmann::json json = support::parse_json(text, [&](const std::string &why) {
    throw IntegrityError("identity " + source_for_errors + " is damaged (" + why +
                         "); the entry cannot be trusted: rebuild or republish the artifact");
  });
  return artifact_identity_from_json(json, source_for_errors);
}

}  // namespace kiln::artifact
