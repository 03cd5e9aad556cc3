#include "store/entry.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "store/files.hpp"
#include "store/names.hpp"

namespace kiln::store {
namespace {

using nlohmann::json;

[[noreturn]] void corrupt(const fs::path &file, const std::string &detail) {
  throw IntegrityError("store entry file " + file.string() + " is damaged (" + detail +
                       "); the entry cannot be trusted: remove its directory and republish or rebuild the artifact");
}

}  // namespace

EntryMeta read_entry_meta(const fs::path &entry_dir) {
  const fs::path file = entry_dir / kMetaFile;
  std::string text;
  try {
    text = read_file(file);
  } catch (const NotFoundError &) {
    throw IntegrityError("store entry " + entry_dir.string() +
                         " has no meta.json: the manifest names an entry that is missing or incomplete; republish "
                         "or rebuild the artifact");
  }
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error &error) {
    corrupt(file, std::string("not valid JSON: ") + error.what());
  }
  try {
    if (root.at("schema").get<int>() != kArtifactSchema) {
      throw IncompatibleError("store entry " + entry_dir.string(),
                              {{"artifact_schema", std::to_string(root.at("schema").get<int>()),
                                std::to_string(kArtifactSchema), "written by another kiln version; rebuild or republish"}});
    }
    EntryMeta meta;
    meta.content_key = root.at("content_key").get<std::string>();
    meta.kind = root.at("kind").get<std::string>();
    meta.file = root.at("file").get<std::string>();
    meta.digest = root.at("digest").get<std::string>();
    meta.size = root.at("size").get<std::uint64_t>();
    meta.created = root.value("created", "");
    if (!is_valid_key(meta.digest)) corrupt(file, "digest is not 32 lower-case hex digits");
    if (!is_valid_name(meta.file)) corrupt(file, "file name \"" + meta.file.substr(0, 80) + "\" is not a plain name");
    return meta;
  } catch (const json::exception &error) {
    corrupt(file, error.what());
  }
}

std::string serialize_entry_meta(const EntryMeta &meta) {
  const json root = {{"schema", kArtifactSchema}, {"content_key", meta.content_key}, {"kind", meta.kind},
                     {"file", meta.file},         {"digest", meta.digest},           {"size", meta.size},
                     {"created", meta.created}};
  return root.dump(2) + "\n";
}

bool commit_staging(const fs::path &staging_dir, const fs::path &entry_dir) {
  for (const auto &item : fs::directory_iterator(staging_dir)) fsync_path(item.path());
  fsync_path(staging_dir);
  if (::rename(staging_dir.c_str(), entry_dir.c_str()) != 0) {
    const int error = errno;
    if (error == EEXIST || error == ENOTEMPTY) {
      boost::system::error_code ignored;
      fs::remove_all(staging_dir, ignored);
      return false;
    }
    throw IoError("cannot publish " + staging_dir.string() + " as " + entry_dir.string() + ": " +
                  std::strerror(error));
  }
  fsync_path(entry_dir.parent_path());
  return true;
}

}  // namespace kiln::store
