#include "store/storage.hpp"

#include <algorithm>
#include <atomic>
#include <set>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "store/names.hpp"

#include "support/fault_point.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

// Unique in the process, never 0: resolutions of every Runtime meet in the loader's one table.
std::uint64_t next_resolution_serial() {
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}

std::string searched(const std::vector<StoreInfo> &stores) {
  std::string text;
  for (const auto &store : stores) text += (text.empty() ? "" : ", ") + store.root;
  return text;
}

}  // namespace

Storage::Storage(const std::vector<StoreLocation> &locations) {
  if (locations.empty() || !locations.back().writable) {
    throw Error(ErrorKind::other, "internal: a Storage needs the writable cache as its last location");
  }
  for (const auto &location : locations) {
    layers_.push_back(std::make_unique<LocalStore>(location));
    infos_.push_back({location.root.string(), location.writable, location.origin});
  }
}

Storage::~Storage() = default;

Resolution Storage::resolve_in(const LocalStore &layer, const std::string &consumer, const std::string &name,
                               bool *consumer_seen, std::vector<std::string> *known,
                               std::optional<files::FileIdentity> *manifest_id, files::FileIdentity *meta_id) const {
  const auto manifest = layer.manifest(consumer, manifest_id);
  if (!manifest) return {};
  if (consumer_seen != nullptr) *consumer_seen = true;
  const auto found = manifest->artifacts.find(name);
  if (found == manifest->artifacts.end()) {
    if (known != nullptr) {
      for (const auto &item : manifest->artifacts) known->push_back(item.first);
    }
    return {};
  }
  return entry_resolution(layer, consumer, name, found->second, meta_id);
}

Resolution Storage::entry_resolution(const LocalStore &layer, const std::string &consumer, const std::string &name,
                                     const ManifestRecord &record, files::FileIdentity *meta_id) const {
  const std::string what = consumer + "/" + name;
  const EntryRecords entry = layer.entry(consumer, record.content_key, what);
  if (meta_id != nullptr) *meta_id = entry.meta_id;
  Resolution resolution;
  resolution.consumer = consumer;
  resolution.name = name;
  resolution.content_key = record.content_key;
  resolution.input_key = record.input_key;
  resolution.kind = record.kind.empty() ? entry.meta.kind : record.kind;
  resolution.updated = record.updated;
  resolution.store_root = layer.root().string();
  resolution.store_writable = layer.writable();
  const fs::path entry_dir = layer.layout(consumer).entry(record.content_key);
  resolution.entry_dir = entry_dir.string();
  resolution.file = (entry_dir / entry.meta.file).string();
  resolution.digest = entry.meta.digest;
  resolution.size = entry.meta.size;
  resolution.identity = entry.identity;
  resolution.images = entry.meta.images;
  resolution.kernels = entry.meta.kernels;
  if (resolution.kind != entry.meta.kind) {
    throw IntegrityError("manifest of " + consumer + " says " + name + " is a \"" + resolution.kind +
                         "\" artifact but its entry " + entry_dir.string() + " holds a \"" + entry.meta.kind +
                         "\" one: the store was altered; republish or rebuild it");
  }
  return resolution;
}

Resolution Storage::resolve_entry(const std::string &consumer, const std::string &content_key,
                                  const std::string &name) const {
  validate_name("consumer", consumer);
  validate_name("artifact name", name);
  if (!is_valid_key(content_key)) {
    throw UsageError("content key \"" + content_key + "\" is not 32 lower-case hex digits (kiln ls " + consumer +
                     " lists the keys)");
  }
  for (const auto &layer : layers_) {
    boost::system::error_code error;
    if (!fs::is_directory(fs::symlink_status(layer->layout(consumer).entry(content_key), error))) continue;
    ManifestRecord record{content_key, "", "", "", "", ""};
    std::string label = name;
    if (const auto manifest = layer->manifest(consumer)) {
      // The name the manifest gives this entry, when it still names it (name first).
      const auto named = manifest->artifacts.find(name);
      if (named == manifest->artifacts.end() || named->second.content_key != content_key) {
        for (const auto &[other, item] : manifest->artifacts) {
          if (item.content_key == content_key) label = other;
        }
      }
      const auto found = manifest->artifacts.find(label);
      if (found != manifest->artifacts.end() && found->second.content_key == content_key) record = found->second;
    }
    return entry_resolution(*layer, consumer, label, record);
  }
  throw NotFoundError("no entry " + content_key + " of consumer \"" + consumer + "\" in any store (searched " +
                      searched(infos_) + "): name a content key `kiln ls " + consumer + "` lists, or publish it first");
}

std::shared_ptr<const Resolution> Storage::resolve(const std::string &consumer, const std::string &name,
                                                   std::uint64_t *serial) const {
  // The names are validated on a miss only: every remembered key was made of two valid names
  // (neither holds '/' or NUL), so a key that matches one is made of those very names.
  std::string key = consumer;
  key += '/';
  key += name;
  std::shared_ptr<const CachedResolution> cached;
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto hit = resolutions_.find(key);
    if (hit != resolutions_.end()) cached = hit->second;
  }
  if (cached) {
    bool current = true;
    for (std::size_t i = 0; current && i < cached->manifest_files.size(); ++i) {
      current = files::identify(cached->manifest_files[i].c_str()) == cached->manifest_ids[i];
    }
    if (current && files::identify(cached->meta_file.c_str()) == cached->meta_id) {
      if (serial != nullptr) *serial = cached->serial;
      return cached->resolution;
    }
  }

  validate_name("consumer", consumer);
  validate_name("artifact name", name);
  // Remembered under the identities of the very files read (their descriptors'): a change
  // after a read makes the remembered identity stale, never the remembered resolution.
  auto fresh = std::make_shared<CachedResolution>();
  bool consumer_seen = false;
  std::vector<std::string> known;
  for (const auto &layer : layers_) {
    fresh->manifest_files.push_back(layer->layout(consumer).manifest().string());
    fresh->manifest_ids.emplace_back();
    Resolution resolution =
        resolve_in(*layer, consumer, name, &consumer_seen, &known, &fresh->manifest_ids.back(), &fresh->meta_id);
    if (resolution.content_key.empty()) continue;
    fresh->meta_file = (fs::path(resolution.entry_dir) / kMetaFile).string();
    fresh->resolution = std::make_shared<const Resolution>(std::move(resolution));
    fresh->serial = next_resolution_serial();
    if (serial != nullptr) *serial = fresh->serial;
    std::lock_guard<std::mutex> lock(cache_mutex_);
    resolutions_[key] = fresh;
    return fresh->resolution;
  }
  if (!consumer_seen) {
    throw NotFoundError("no consumer \"" + consumer + "\" in any store (searched " + searched(infos_) +
                        "): publish or build one of its artifacts first, or add its store to KILN_STORE_PATH");
  }
  std::string list;
  for (const auto &item : known) list += (list.empty() ? "" : ", ") + item;
  throw NotFoundError("no artifact \"" + name + "\" in consumer \"" + consumer + "\" (it has: " +
                      (list.empty() ? "nothing" : list) + "; searched " + searched(infos_) + ")");
}

Resolution Storage::resolve_writable(const std::string &consumer, const std::string &name) const {
  return resolve_in(writable(), consumer, name, nullptr, nullptr);
}

std::vector<ArtifactSummary> Storage::list(const std::string &consumer) const {
  if (!consumer.empty()) validate_name("consumer", consumer);
  std::vector<ArtifactSummary> out;
  std::set<std::string> seen;  // consumer/name already found in an earlier layer
  for (const auto &layer : layers_) {
    std::vector<std::string> consumers;
    if (!consumer.empty()) {
      consumers.push_back(consumer);
    } else {
      boost::system::error_code error;
      for (fs::directory_iterator it(layer->root() / "consumers", error), end; !error && it != end;
           it.increment(error)) {
        const std::string item = it->path().filename().string();
        if (is_valid_name(item)) consumers.push_back(item);
      }
      std::sort(consumers.begin(), consumers.end());
    }
    for (const auto &each : consumers) {
      std::shared_ptr<const Manifest> manifest;
      try {
        manifest = layer->manifest(each);
      } catch (const IntegrityError &damage) {
        if (!consumer.empty()) throw;  // asked for by name: its manifest is the answer
        out.push_back({each, "", "", "", layer->root().string(), layer->writable(), false, "", damage.what()});
        continue;
      }
      if (!manifest) continue;
      for (const auto &[name, record] : manifest->artifacts) {
        const bool shadowed = !seen.insert(each + "/" + name).second;
        out.push_back({each, name, record.content_key, record.kind, layer->root().string(), layer->writable(),
                       shadowed, record.updated, ""});
      }
    }
  }
  return out;
}

bool Storage::commit(Staging &&staging, const Publication &publication, const LogCallback &log,
                     ExistingEntry existing) const {
  if (staging.meta().content_key != publication.content_key || staging.consumer() != publication.consumer) {
    throw Error(ErrorKind::other, "internal: staging of " + staging.consumer() + "/" + staging.meta().content_key +
                                      " committed as " + publication.consumer + "/" + publication.content_key);
  }
  const bool fresh = writable().commit_entry(std::move(staging), log, existing);
  if (publication.input_key.empty()) {
    KILN_FAULT_POINT("publish.after_entry");
  } else {
    KILN_FAULT_POINT("build.after_entry");
  }
  point(publication);
  return fresh;
}

void Storage::point(const Publication &publication) const {
  const LocalStore &cache = writable();
  if (!publication.input_key.empty()) {
    cache.write_pointer(publication.consumer, publication.input_key, publication.content_key);
    KILN_FAULT_POINT("build.after_bykey");
  }
  const bool renamed = cache.write_record(publication.consumer, publication.name,
                                         {publication.content_key, publication.input_key, publication.kind,
                                          utc_now_iso8601(), "", ""});
  if (renamed && on_rename_) on_rename_(publication.consumer, publication.name);
}

void Storage::point_all(const std::vector<Publication> &publications) const {
  const LocalStore &cache = writable();
  std::map<std::string, std::map<std::string, ManifestRecord>> records;  // consumer -> name -> record
  const std::string now = utc_now_iso8601();
  for (const auto &publication : publications) {
    if (!publication.input_key.empty()) {
      cache.write_pointer(publication.consumer, publication.input_key, publication.content_key);
      KILN_FAULT_POINT("import.after_bykey");
    }
    records[publication.consumer][publication.name] = {publication.content_key, publication.input_key, publication.kind,
                                                       now, publication.bundle_created, publication.rollback};
  }
  for (const auto &[consumer, named] : records) {
    KILN_FAULT_POINT("import.before_manifest");
    const std::vector<std::string> renamed = cache.write_records(consumer, named);
    // A crash here leaves the names recorded and no bump (publish and build alike): watchers
    // notice it at their once-a-second look at what the name resolves to (swap/core.hpp).
    KILN_FAULT_POINT("import.after_manifest");
    for (const auto &name : renamed) {
      if (on_rename_) on_rename_(consumer, name);
    }
  }
}

}  // namespace kiln::store
