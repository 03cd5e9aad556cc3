#include "store/manifest.hpp"

#include <ctime>

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "store/files.hpp"
#include "store/locks.hpp"
#include "store/names.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"

#include "support/fault_point.hpp"

namespace kiln::store {
namespace {

using nlohmann::json;

[[noreturn]] void corrupt_manifest(const fs::path &file, const std::string &detail) {
  throw IntegrityError("manifest " + file.string() + " is damaged (" + detail +
                       "): it was changed outside kiln or torn by a crash of an old writer; the artifact "
                       "entries under store/ are untouched - move the file away and republish (kiln publish) "
                       "or rebuild (kiln build) the artifacts it named");
}

std::string string_field(const json &object, const char *key, const fs::path &file, const std::string &where,
                         bool required) {
  const auto it = object.find(key);
  if (it == object.end()) {
    if (required) corrupt_manifest(file, where + " has no \"" + key + "\"");
    return {};
  }
  if (!it->is_string()) corrupt_manifest(file, where + "." + key + " is not a string but " + support::describe_json(*it));
  return it->get<std::string>();
}

}  // namespace

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

Manifest parse_manifest(const std::string &text, const fs::path &file, const std::string &consumer) {
  const json root = support::parse_json(text, [&](const std::string &why) { corrupt_manifest(file, why); });
  if (!root.is_object()) corrupt_manifest(file, "top level is not an object");
  const auto schema = root.find("schema");
  if (schema == root.end()) corrupt_manifest(file, "no \"schema\"");
  const auto schema_number = support::checked_integer<int>(*schema, 1);
  if (!schema_number) corrupt_manifest(file, "\"schema\" is " + support::describe_json(*schema) + ", not a schema number (1 ... 2^31-1)");
  if (*schema_number != kManifestSchema) {
    throw IncompatibleError("manifest " + file.string(),
                            {{"manifest_schema", std::to_string(*schema_number), std::to_string(kManifestSchema),
                              "written by another kiln version; use that version, or republish with this one"}});
  }
  Manifest manifest;
  manifest.consumer = string_field(root, "consumer", file, "manifest", true);
  if (manifest.consumer != consumer) {
    corrupt_manifest(file, "it names consumer \"" + manifest.consumer + "\" but lives in the directory of \"" + consumer + "\"");
  }
  const auto artifacts = root.find("artifacts");
  if (artifacts == root.end() || !artifacts->is_object()) corrupt_manifest(file, "no \"artifacts\" object");
  for (const auto &[name, record] : artifacts->items()) {
    if (!is_valid_name(name)) corrupt_manifest(file, "artifact name \"" + name.substr(0, 80) + "\" is not a valid name");
    if (!record.is_object()) corrupt_manifest(file, "artifact \"" + name + "\" is not an object but " + support::describe_json(record));
    ManifestRecord entry;
    const std::string where = "artifacts." + name;
    entry.content_key = string_field(record, "content_key", file, where, true);
    if (!is_valid_key(entry.content_key)) corrupt_manifest(file, where + ".content_key is not 32 lower-case hex digits");
    entry.input_key = string_field(record, "input_key", file, where, false);
    entry.kind = string_field(record, "kind", file, where, true);
    entry.updated = string_field(record, "updated", file, where, false);
    entry.bundle_created = string_field(record, "bundle_created", file, where, false);
    manifest.artifacts.emplace(name, std::move(entry));
  }
  return manifest;
}

std::optional<Manifest> read_manifest(const fs::path &file, const std::string &consumer) {
  std::string text;
  try {
    text = read_file(file, FileOrigin::store, kMaxJsonFileBytes);
  } catch (const NotFoundError &) {
    return std::nullopt;
  }
  return parse_manifest(text, file, consumer);
}

std::string serialize_manifest(const Manifest &manifest) {
  json artifacts = json::object();
  for (const auto &[name, record] : manifest.artifacts) {
    json entry = {{"content_key", record.content_key}, {"kind", record.kind}, {"updated", record.updated}};
    if (!record.input_key.empty()) entry["input_key"] = record.input_key;
    if (!record.bundle_created.empty()) entry["bundle_created"] = record.bundle_created;
    artifacts[name] = std::move(entry);
  }
  json root = {{"schema", kManifestSchema}, {"consumer", manifest.consumer}, {"artifacts", std::move(artifacts)}};
  return support::dump_json(root, 2) + "\n";
}

void update_manifest(const ConsumerLayout &layout, const std::function<void(Manifest &)> &change) {
  store::create_directories(layout.dir());
  FileLock lock(layout.manifest_lock());
  update_manifest_held(layout, change);
}

void update_manifest_held(const ConsumerLayout &layout, const std::function<void(Manifest &)> &change) {
  remove_dead_temps(layout.manifest());  // every writer holds the lock: only dead temps are old
  Manifest manifest = read_manifest(layout.manifest(), layout.consumer()).value_or(Manifest{layout.consumer(), {}});
  change(manifest);
  KILN_FAULT_POINT("manifest.locked");
  write_file_atomic(layout.manifest(), serialize_manifest(manifest));
}

}  // namespace kiln::store
