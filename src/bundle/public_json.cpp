// include/kiln/json.hpp: the JSON forms of the bundle reports (kiln/bundle.hpp), as `kiln export
// --json`, `kiln import --json`, `kiln key --json` and the Python binding give them.
#include <kiln/json.hpp>

namespace kiln {

using nlohmann::json;

namespace {

json entries_json(const std::vector<BundleEntry> &entries) {
  json out = json::array();
  for (const auto &entry : entries) {
    out.push_back({{"consumer", entry.consumer}, {"name", entry.name},           {"content_key", entry.content_key},
                   {"kind", entry.kind},         {"input_key", entry.input_key}, {"bytes", entry.bytes},
                   {"status", entry.status},     {"release_version", entry.release_version}});
  }
  return out;
}

json key_id(const std::string &signed_by) { return signed_by.empty() ? json(nullptr) : json(signed_by); }

}  // namespace

json to_json(const ExportReport &report) {
  return {{"bundle", report.bundle},
          {"entries", entries_json(report.entries)},
          {"content_bytes", report.content_bytes},
          {"bundle_bytes", report.bundle_bytes},
          {"signed_by", key_id(report.signed_by)},
          {"release_version", report.release_version},
          {"expires", report.expires},
          {"key_list_generation", report.key_list_generation}};
}

json to_json(const ImportReport &report) {
  return {{"bundle", report.bundle},
          {"store_root", report.store_root},
          {"entries", entries_json(report.entries)},
          {"verified_bytes", report.verified_bytes},
          {"signature_verified", report.signature_verified},
          {"signed_by", key_id(report.signed_by)},
          {"expires", report.expires.empty() ? json(nullptr) : json(report.expires)},
          {"expired", report.expired},
          {"key_list_generation", report.key_list_generation}};
}

json to_json(const KeyListInfo &info) {
  json keys = json::array();
  for (const auto &key : info.keys) {
    json item = {{"key_id", key.key_id},       {"name", key.name},       {"roles", key.roles},
                 {"consumers", key.consumers}, {"expires", key.expires}, {"status", key.status}};
    if (key.status == "revoked") {
      item["revoked"] = {{"all", key.revoked_all}, {"reason", key.revoke_reason}};
      if (!key.revoked_all) item["revoked"]["at"] = key.revoked_at;
    }
    keys.push_back(item);
  }
  return {{"file", info.file},
          {"generation", info.generation},
          {"created", info.created},
          {"expires", info.expires},
          {"expired", info.expired},
          {"roots", info.roots},
          {"keys", keys}};
}

json to_json(const TrustStatus &status) {
  if (status.root_key_id.empty()) return {{"root", nullptr}, {"key_list", nullptr}};
  return {{"root", {{"key_id", status.root_key_id}, {"file", status.root_file}}},
          {"key_list", status.key_list_file.empty() ? json(nullptr) : to_json(status.key_list)}};
}

}  // namespace kiln
