#include "builder/file_facts.hpp"

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "files/files.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

constexpr int kFileFactsFormat = 1;

json file_identity_json(const files::FileIdentity &id) {
  return {{"device", id.device}, {"inode", id.inode}, {"size", id.size}, {"mtime_ns", id.mtime_ns},
          {"ctime_ns", id.ctime_ns}};
}

std::optional<files::FileIdentity> file_identity_from_json(const json &entry) {
  if (!entry.is_object()) return std::nullopt;
  const auto field = [&](const char *key) { return entry.contains(key) ? entry[key] : json(); };
  const auto device = support::checked_integer<std::uint64_t>(field("device"));
  const auto inode = support::checked_integer<std::uint64_t>(field("inode"));
  const auto size = support::checked_integer<std::uint64_t>(field("size"));
  const auto mtime = support::checked_integer<std::int64_t>(field("mtime_ns"));
  const auto ctime = support::checked_integer<std::int64_t>(field("ctime_ns"));
  if (!device || !inode || !size || !mtime || !ctime) return std::nullopt;
  files::FileIdentity id;
  id.device = *device;
  id.inode = *inode;
  id.size = *size;
  id.mtime_ns = *mtime;
  id.ctime_ns = *ctime;
  return id;
}

// The memo's entries: real path -> {identity fields, facts}.
json read_entries(const fs::path &file) {
  struct Unusable {};
  try {
    json memo = support::parse_json(files::read_file(file, files::FileOrigin::store, files::kMaxJsonFileBytes),
                                    [](const std::string &) { throw Unusable{}; });
    if (memo.is_object() && memo.contains("format") &&
        support::checked_integer<int>(memo["format"]) == kFileFactsFormat && memo.contains("executables") &&
        memo["executables"].is_object()) {
      return memo["executables"];
    }
  } catch (const Error &) {
  } catch (const Unusable &) {
  }
  return json::object();
}

}  // namespace

FileKey file_key_of(const std::string &file) {
  boost::system::error_code error;
  const fs::path real = fs::canonical(file, error);
  if (error) throw IoError("cannot resolve " + file + ": " + error.message());
  const auto identity = files::identify(real);
  if (!identity) throw IoError("cannot stat " + real.string() + " (it vanished while being identified: retry)");
  return {real.string(), *identity};
}

FileFacts::FileFacts(const fs::path &memo_file)
    : file_(memo_file), entries_(memo_file.empty() ? json::object() : read_entries(memo_file)) {}

std::optional<std::string> FileFacts::get(const FileKey &key, const char *field) const {
  const auto found = entries_.find(key.real_path);
  if (found == entries_.end() || !found->is_object()) return std::nullopt;
  const auto recorded = file_identity_from_json(*found);
  if (!recorded || *recorded != key.identity) return std::nullopt;
  const auto value = found->find(field);
  if (value == found->end() || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

void FileFacts::put(const FileKey &key, const std::string &field, std::string value) {
  fresh_.push_back({key, field, std::move(value)});
}

void FileFacts::save() {
  if (fresh_.empty() || file_.empty()) return;
  json entries = entries_;
  for (const auto &[key, field, value] : fresh_) {
    json &entry = entries[key.real_path];
    const auto recorded = file_identity_from_json(entry);
    if (!recorded || *recorded != key.identity) entry = file_identity_json(key.identity);  // another file now
    entry[field] = value;
  }
  // Drop what no longer describes a file there (toolchains upgraded or removed, tools rebuilt).
  for (auto it = entries.begin(); it != entries.end();) {
    const auto recorded = file_identity_from_json(*it);
    const auto now = files::identify(it.key());
    it = (!recorded || !now || *recorded != *now) ? entries.erase(it) : std::next(it);
  }
  entries_ = entries;
  const json memo = {{"format", kFileFactsFormat}, {"executables", std::move(entries)}};
  try {
    files::create_directories(file_.parent_path());
    files::remove_dead_temps(file_);  // killed writers' (no lock: any a minute old is dead)
    files::write_file_atomic(file_, support::dump_json(memo, 2) + "\n");
  } catch (const Error &) {
    // Only a cache: a read-only store still builds, it just asks again next time.
  }
  fresh_.clear();
}

}  // namespace kiln::builder
