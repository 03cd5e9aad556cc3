#include "bundle/index.hpp"

#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>

#include "bundle/hash.hpp"
#include "store/names.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"
#include "support/utc_time.hpp"

namespace kiln::bundle {
namespace {

using nlohmann::json;

[[noreturn]] void corrupt(const std::string &bundle, const std::string &member, const std::string &why) {
  throw IntegrityError("bundle " + bundle + ": " + member + " " + why +
                       ": the bundle is damaged or was not written by kiln export; nothing was imported, get the "
                       "bundle again");
}

const json &member(const json &object, const char *key, const std::string &bundle, const std::string &where) {
  if (!object.is_object()) corrupt(bundle, kIndexMember, where + " is not an object");
  const auto it = object.find(key);
  if (it == object.end()) corrupt(bundle, kIndexMember, where + " has no \"" + key + "\"");
  return *it;
}

std::string text(const json &object, const char *key, const std::string &bundle, const std::string &where) {
  const json &value = member(object, key, bundle, where);
  if (!value.is_string()) corrupt(bundle, kIndexMember, where + "." + key + " is " + support::describe_json(value) + ", not a string");
  return value.get<std::string>();
}

const json &list(const json &object, const char *key, const std::string &bundle, const std::string &where, std::size_t max) {
  const json &value = member(object, key, bundle, where);
  if (!value.is_array()) corrupt(bundle, kIndexMember, where + "." + key + " is not a list");
  if (value.size() > max) corrupt(bundle, kIndexMember, where + "." + key + " lists " + std::to_string(value.size()) + " items (at most " + std::to_string(max) + ")");
  return value;
}

bool is_hash(const std::string &text) {
  unsigned char ignored[kHashBytes];
  return from_hex(text, ignored, sizeof ignored);
}

}  // namespace

std::string member_name(const IndexEntry &entry, const IndexFile &file) {
  return std::string(kEntriesDir) + "/" + entry.consumer + "/" + entry.content_key + "/" + file.name;
}

std::string serialize_index(const Index &index) {
  json entries = json::array();
  for (const auto &entry : index.entries) {
    json records = json::array(), files = json::array();
    for (const auto &record : entry.records) {
      json item = {{"name", record.name}, {"input_key", record.input_key}};
      if (record.version != 0) item["version"] = record.version;
      records.push_back(std::move(item));
    }
    for (const auto &file : entry.files) {
      files.push_back({{"name", file.name}, {"size", file.size}, {"mode", file.mode}, {"blake2b", file.blake2b}});
    }
    entries.push_back({{"consumer", entry.consumer}, {"content_key", entry.content_key}, {"kind", entry.kind},
                       {"records", records}, {"files", files}});
  }
  json root = {{"format", kFormat}, {"version", kFormatVersion}, {"created", index.created},
               {"kiln_version", index.kiln_version}, {"entries", entries}};
  if (!index.expires.empty()) root["expires"] = index.expires;
  return support::dump_json(root, 1) + "\n";
}

Index parse_index(std::string_view content, const std::string &bundle) {
  const json root = support::parse_json(content, [&](const std::string &why) { corrupt(bundle, kIndexMember, "is not JSON (" + why + ")"); });
  if (text(root, "format", bundle, "the index") != kFormat) corrupt(bundle, kIndexMember, "is not a kiln bundle index (\"format\" is not \"kiln-bundle\")");
  const auto version = support::checked_integer<int>(member(root, "version", bundle, "the index"));
  if (!version || *version != kFormatVersion) {
    throw IncompatibleError("bundle " + bundle, {{"bundle_version", support::describe_json(root["version"]),
                                                  std::to_string(kFormatVersion), "written by another kiln version"}});
  }
  Index index;
  index.created = text(root, "created", bundle, "the index");
  // Compared as text against the creation time of the bundle that set a name (replays): only the
  // one form kiln writes orders correctly that way.
  if (!support::is_utc_time(index.created)) corrupt(bundle, kIndexMember, "\"created\" is not a UTC time of the form 2026-01-31T23:59:59Z");
  if (root.contains("expires")) {  // older kilns wrote none
    index.expires = text(root, "expires", bundle, "the index");
    if (!support::is_utc_time(index.expires)) corrupt(bundle, kIndexMember, "\"expires\" is not a UTC time of the form 2026-01-31T23:59:59Z");
  }
  index.kiln_version = text(root, "kiln_version", bundle, "the index");
  std::set<std::pair<std::string, std::string>> keys, names;
  for (const json &item : list(root, "entries", bundle, "the index", kMaxEntries)) {
    IndexEntry entry;
    entry.consumer = text(item, "consumer", bundle, "an entry");
    const std::string where = "entry " + entry.consumer.substr(0, 64);
    if (!store::is_valid_name(entry.consumer)) corrupt(bundle, kIndexMember, "names a consumer \"" + entry.consumer.substr(0, 80) + "\" that is not a plain name");
    entry.content_key = text(item, "content_key", bundle, where);
    if (!store::is_valid_key(entry.content_key)) corrupt(bundle, kIndexMember, where + ": content_key is not 32 lower-case hex digits");
    const std::string at = "entry " + entry.consumer + "/" + entry.content_key;
    entry.kind = text(item, "kind", bundle, at);
    if (entry.kind != kKindPlugin && entry.kind != kKindImages) {
      corrupt(bundle, kIndexMember, at + ": kind is neither \"" + kKindPlugin + "\" nor \"" + kKindImages + "\"");
    }
    if (!keys.insert({entry.consumer, entry.content_key}).second) corrupt(bundle, kIndexMember, "lists " + at + " twice");
    for (const json &record_json : list(item, "records", bundle, at, kMaxEntries)) {
      IndexRecord record{text(record_json, "name", bundle, at + " record"), text(record_json, "input_key", bundle, at + " record")};
      if (!store::is_valid_name(record.name)) corrupt(bundle, kIndexMember, at + ": artifact name \"" + record.name.substr(0, 80) + "\" is not a plain name");
      if (!record.input_key.empty() && !store::is_valid_key(record.input_key)) corrupt(bundle, kIndexMember, at + ": input_key is not 32 lower-case hex digits");
      if (record_json.contains("version")) {  // older kilns wrote none
        const auto release = support::checked_integer<std::uint64_t>(record_json["version"], 1);
        if (!release) corrupt(bundle, kIndexMember, at + " record " + record.name + ": version is not a positive integer");
        record.version = *release;
      }
      if (!names.insert({entry.consumer, record.name}).second) corrupt(bundle, kIndexMember, "names " + entry.consumer + "/" + record.name + " twice");
      entry.records.push_back(std::move(record));
    }
    std::set<std::string> file_names;
    for (const json &file_json : list(item, "files", bundle, at, kMaxFilesPerEntry)) {
      IndexFile file;
      file.name = text(file_json, "name", bundle, at + " file");
      if (!store::is_valid_name(file.name)) corrupt(bundle, kIndexMember, at + ": file name \"" + file.name.substr(0, 80) + "\" is not a plain name");
      const std::string of = at + " file " + file.name;
      const auto size = support::checked_integer<std::uint64_t>(member(file_json, "size", bundle, of), 0, kMaxMemberBytes);
      if (!size) corrupt(bundle, kIndexMember, of + ": size is not a byte count of at most " + std::to_string(kMaxMemberBytes));
      file.size = *size;
      const auto mode = support::checked_integer<unsigned>(member(file_json, "mode", bundle, of));
      if (!mode || (*mode != 0644 && *mode != 0755)) corrupt(bundle, kIndexMember, of + ": mode is neither 0644 nor 0755");
      file.mode = *mode;
      file.blake2b = text(file_json, "blake2b", bundle, of);
      if (!is_hash(file.blake2b)) corrupt(bundle, kIndexMember, of + ": blake2b is not 64 lower-case hex digits");
      if (!file_names.insert(file.name).second) corrupt(bundle, kIndexMember, "lists " + of + " twice");
      entry.files.push_back(std::move(file));
    }
    index.entries.push_back(std::move(entry));
  }
  return index;
}

std::string serialize_signature(const Signature &signature) {
  const json root = {{"format", "kiln-bundle-signature"},
                     {"version", kFormatVersion},
                     {"algorithm", "ed25519"},
                     {"signs", kIndexMember},
                     {"key_id", signature.key_id},
                     {"signature", to_hex(reinterpret_cast<const unsigned char *>(signature.signature.data()),
                                          signature.signature.size())}};
  return support::dump_json(root, 1) + "\n";
}

Signature parse_signature(std::string_view content, const std::string &bundle) {
  const auto bad = [&](const std::string &why) { corrupt(bundle, kSignatureMember, why); };
  const json root = support::parse_json(content, [&](const std::string &why) { bad("is not JSON (" + why + ")"); });
  if (!root.is_object()) bad("is not an object");
  const auto string_field = [&](const char *key) {
    const auto it = root.find(key);
    if (it == root.end() || !it->is_string()) bad(std::string("has no string \"") + key + "\"");
    return it->get<std::string>();
  };
  if (string_field("format") != "kiln-bundle-signature" || string_field("algorithm") != "ed25519" ||
      string_field("signs") != kIndexMember) {
    bad("is not a kiln Ed25519 signature of " + std::string(kIndexMember));
  }
  Signature signature;
  signature.key_id = string_field("key_id");
  unsigned char id[8];
  if (!from_hex(signature.key_id, id, sizeof id)) bad("key_id is not 16 lower-case hex digits");
  unsigned char raw[64];
  if (!from_hex(string_field("signature"), raw, sizeof raw)) bad("signature is not 128 lower-case hex digits");
  signature.signature.assign(reinterpret_cast<const char *>(raw), sizeof raw);
  return signature;
}

}  // namespace kiln::bundle
