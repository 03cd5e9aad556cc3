#include "store/manifest.hpp"

#include <ctime>
#include <exception>
#include <optional>

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "files/files.hpp"
#include "files/locks.hpp"
#include "store/names.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"
#include "support/utc_time.hpp"

#include "support/fault_point.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

using nlohmann::json;
using Sax = json::json_sax_t;

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

// One artifact's record, checked, as the manifest holds it.
ManifestRecord record_of(const std::string &name, const json &record, const fs::path &file) {
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
  entry.rollback = string_field(record, "rollback", file, where, false);
  return entry;
}

// manifest.json read as events, so that its parsed form is never held whole beside the
// Manifest (a manifest of 50,000 names: 66 MB as one value, 7 MB as text): each artifact's
// record is built alone, checked and kept as a ManifestRecord; the rest of the top level
// (schema, consumer, anything else) is built whole, being small. What the records' checks
// find is said after the schema's and the consumer's, as when the value was read whole.
class ManifestEvents final : public Sax {
 public:
  ManifestEvents(Manifest &manifest, const fs::path &file) : manifest_(manifest), file_(file) {}

  const json &top_level() const { return top_; }
  bool top_is_object() const { return top_is_object_; }
  bool has_artifacts() const { return has_artifacts_; }
  void rethrow_record_error() const {
    if (record_error_) std::rethrow_exception(record_error_);
  }

  bool null() override { return scalar([](Sax &dom) { return dom.null(); }); }
  bool boolean(bool value) override { return scalar([&](Sax &dom) { return dom.boolean(value); }); }
  bool number_integer(number_integer_t value) override {
    return scalar([&](Sax &dom) { return dom.number_integer(value); });
  }
  bool number_unsigned(number_unsigned_t value) override {
    return scalar([&](Sax &dom) { return dom.number_unsigned(value); });
  }
  bool number_float(number_float_t value, const string_t &text) override {
    return scalar([&](Sax &dom) { return dom.number_float(value, text); });
  }
  bool string(string_t &value) override { return scalar([&](Sax &dom) { return dom.string(value); }); }
  bool binary(binary_t &value) override { return scalar([&](Sax &dom) { return dom.binary(value); }); }

  bool start_object(std::size_t size) override {
    if (!capture_ && level_ == 0) {  // the top level
      top_is_object_ = true;
      level_ = 1;
      return true;
    }
    if (!capture_ && level_ == 1 && key_ == "artifacts") {
      has_artifacts_ = true;
      manifest_.artifacts.clear();  // a repeated key: the last one counts
      level_ = 2;
      return true;
    }
    return nested([&](Sax &dom) { return dom.start_object(size); });
  }
  bool end_object() override {
    if (!capture_) {
      --level_;
      return true;
    }
    return closed([](Sax &dom) { return dom.end_object(); });
  }
  bool start_array(std::size_t size) override { return nested([&](Sax &dom) { return dom.start_array(size); }); }
  bool end_array() override { return closed([](Sax &dom) { return dom.end_array(); }); }
  bool key(string_t &value) override {
    if (capture_) return capture_->key(value);
    key_ = value;
    return true;
  }
  bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &error) override {
    throw error;
  }

 private:
  // A value at this reader's own level starts: built by a DomBuilder of its own, into where it goes.
  void begin_value() {
    if (level_ == 1 && key_ == "artifacts") has_artifacts_ = false;  // not an object: the last one counts
    captured_ = json();
    capture_.emplace(captured_);
  }
  template <class Event>
  bool scalar(Event event) {
    if (capture_) return event(*capture_);
    begin_value();
    event(*capture_);
    return finish_value();
  }
  template <class Event>
  bool nested(Event event) {
    if (!capture_) begin_value();
    ++depth_;
    return event(*capture_);
  }
  template <class Event>
  bool closed(Event event) {
    event(*capture_);
    return --depth_ == 0 ? finish_value() : true;
  }
  bool finish_value() {
    capture_.reset();
    if (level_ == 2) {
      try {
        manifest_.artifacts[key_] = record_of(key_, captured_, file_);
      } catch (...) {
        if (!record_error_) record_error_ = std::current_exception();
      }
    } else if (level_ == 1) {
      top_[key_] = std::move(captured_);
    }
    captured_ = json();
    return true;
  }

  Manifest &manifest_;
  const fs::path &file_;
  json top_ = json::object();
  bool top_is_object_ = false;
  bool has_artifacts_ = false;
  int level_ = 0;  // 0 outside the top level, 1 in it, 2 in its "artifacts" object
  std::string key_;
  json captured_;
  std::optional<support::DomBuilder> capture_;  // building the value at key_
  int depth_ = 0;                               // of the value being built
  std::exception_ptr record_error_;             // the first record's that failed its checks
};

}  // namespace

std::string utc_now_iso8601() { return support::format_utc_time(std::time(nullptr)); }

Manifest parse_manifest(const std::string &text, const fs::path &file, const std::string &consumer) {
  Manifest manifest;
  ManifestEvents events(manifest, file);
  support::parse_json_events(text, events, [&](const std::string &why) { corrupt_manifest(file, why); });
  const json &root = events.top_level();
  if (!events.top_is_object()) corrupt_manifest(file, "top level is not an object");
  const auto schema = root.find("schema");
  if (schema == root.end()) corrupt_manifest(file, "no \"schema\"");
  const auto schema_number = support::checked_integer<int>(*schema, 1);
  if (!schema_number) corrupt_manifest(file, "\"schema\" is " + support::describe_json(*schema) + ", not a schema number (1 ... 2^31-1)");
  if (*schema_number != kManifestSchema) {
    throw IncompatibleError("manifest " + file.string(),
                            {{"manifest_schema", std::to_string(*schema_number), std::to_string(kManifestSchema),
                              "written by another kiln version; use that version, or republish with this one"}});
  }
  manifest.consumer = string_field(root, "consumer", file, "manifest", true);
  if (manifest.consumer != consumer) {
    corrupt_manifest(file, "it names consumer \"" + manifest.consumer + "\" but lives in the directory of \"" + consumer + "\"");
  }
  if (!events.has_artifacts()) corrupt_manifest(file, "no \"artifacts\" object");
  events.rethrow_record_error();
  return manifest;
}

std::optional<Manifest> read_manifest(const fs::path &file, const std::string &consumer) {
  std::string text;
  try {
    text = files::read_file(file, files::FileOrigin::store, files::kMaxJsonFileBytes);
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
    if (!record.rollback.empty()) entry["rollback"] = record.rollback;
    artifacts[name] = std::move(entry);
  }
  json root = {{"schema", kManifestSchema}, {"consumer", manifest.consumer}, {"artifacts", std::move(artifacts)}};
  return support::dump_json(root, 2) + "\n";
}

void update_manifest(const ConsumerLayout &layout, const std::function<void(Manifest &)> &change) {
  files::create_directories(layout.dir());
  files::FileLock lock(layout.manifest_lock());
  update_manifest_held(layout, change);
}

void update_manifest_held(const ConsumerLayout &layout, const std::function<void(Manifest &)> &change) {
  files::remove_dead_temps(layout.manifest());  // every writer holds the lock: only dead temps are old
  Manifest manifest = read_manifest(layout.manifest(), layout.consumer()).value_or(Manifest{layout.consumer(), {}});
  change(manifest);
  KILN_FAULT_POINT("manifest.locked");
  files::write_file_atomic(layout.manifest(), serialize_manifest(manifest));
}

}  // namespace kiln::store
