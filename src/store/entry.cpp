#include "store/entry.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>
#include <kiln/module.hpp>

#include "files/digest.hpp"
#include "files/files.hpp"
#include "files/remove_tree.hpp"
#include "store/names.hpp"
#include "files/safety.hpp"
#include "files/unique_fd.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"

#include "support/fault_point.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

using nlohmann::json;

[[noreturn]] void corrupt_entry_file(const fs::path &file, const std::string &detail) {
  throw IntegrityError("store entry file " + file.string() + " is damaged (" + detail +
                       "); the entry cannot be trusted: remove its directory and republish or rebuild the artifact");
}

const json &member(const json &object, const char *key, const fs::path &file, const std::string &where) {
  if (!object.is_object()) corrupt_entry_file(file, where + " is " + support::describe_json(object) + ", not an object");
  const auto it = object.find(key);
  if (it == object.end()) corrupt_entry_file(file, where + " has no \"" + key + "\"");
  return *it;
}

std::string text(const json &object, const char *key, const fs::path &file, const std::string &where) {
  const json &value = member(object, key, file, where);
  if (!value.is_string()) corrupt_entry_file(file, where + "." + key + " is " + support::describe_json(value) + ", not a string");
  return value.get<std::string>();
}

std::uint64_t byte_count(const json &object, const char *key, const fs::path &file, const std::string &where) {
  const json &value = member(object, key, file, where);
  const auto size = support::checked_integer<std::uint64_t>(value);
  if (!size) corrupt_entry_file(file, where + "." + key + " is " + support::describe_json(value) + ", not a size in bytes");
  return *size;
}

}  // namespace

EntryMeta read_entry_meta(const fs::path &entry_dir, files::FileIdentity *checked) {
  const fs::path file = entry_dir / kMetaFile;
  std::string content;
  try {
    content = checked != nullptr ? files::read_store_record(file, files::kMaxJsonFileBytes, checked)
                                 : files::read_file(file, files::FileOrigin::store, files::kMaxJsonFileBytes);
  } catch (const NotFoundError &) {
    throw IntegrityError("store entry " + entry_dir.string() +
                         " has no meta.json: the manifest names an entry that is missing or incomplete; republish "
                         "or rebuild the artifact");
  }
  return parse_entry_meta(content, entry_dir);
}

EntryMeta parse_entry_meta(const std::string &content, const fs::path &entry_dir) {
  const fs::path file = entry_dir / kMetaFile;
  const json root = support::parse_json(content, [&](const std::string &why) { corrupt_entry_file(file, why); });
  const json &schema = member(root, "schema", file, "meta.json");
  const auto schema_number = support::checked_integer<int>(schema, 1);
  if (!schema_number) corrupt_entry_file(file, "\"schema\" is " + support::describe_json(schema) + ", not a schema number");
  if (*schema_number != kArtifactSchema) {
    throw IncompatibleError("store entry " + entry_dir.string(),
                            {{"artifact_schema", std::to_string(*schema_number), std::to_string(kArtifactSchema),
                              "written by another kiln version; rebuild or republish"}});
  }
  EntryMeta meta;
  meta.content_key = text(root, "content_key", file, "meta.json");
  meta.kind = text(root, "kind", file, "meta.json");
  meta.file = text(root, "file", file, "meta.json");
  meta.digest = text(root, "digest", file, "meta.json");
  meta.size = byte_count(root, "size", file, "meta.json");
  if (root.contains("created")) meta.created = text(root, "created", file, "meta.json");
  if (!is_valid_key(meta.digest)) corrupt_entry_file(file, "digest is not 32 lower-case hex digits");
  if (!is_valid_name(meta.file)) corrupt_entry_file(file, "file name \"" + meta.file.substr(0, 80) + "\" is not a plain name");
  if (const auto images = root.find("images"); images != root.end()) meta.images = parse_images(*images, file.string());
  if (const auto kernels = root.find("kernels"); kernels != root.end()) meta.kernels = parse_kernels(*kernels, file.string());
  if (meta.kind == kKindImages && meta.images.empty()) corrupt_entry_file(file, "an \"images\" entry lists no image");
  return meta;
}

std::string serialize_entry_meta(const EntryMeta &meta) {
  json root = {{"schema", kArtifactSchema}, {"content_key", meta.content_key}, {"kind", meta.kind},
               {"file", meta.file},         {"digest", meta.digest},           {"size", meta.size},
               {"created", meta.created}};
  if (!meta.images.empty()) root["images"] = images_json(meta.images);
  if (!meta.kernels.empty() || meta.kind == kKindImages) root["kernels"] = kernels_json(meta.kernels);
  return support::dump_json(root, 2) + "\n";
}

json images_json(const std::vector<ArtifactImage> &images) {
  json out = json::array();
  for (const auto &image : images) {
    json item = {{"file", image.file}, {"kind", image.kind}, {"arch", image.arch.to_string()},
                 {"digest", image.digest}, {"size", image.size}};
    if (image.kind == "fatbin") {
      json contains = json::array();
      for (const auto &arch : image.contains) contains.push_back(arch.to_string());
      item["contains"] = contains;
    }
    out.push_back(std::move(item));
  }
  return out;
}

json kernels_json(const std::vector<ArtifactKernel> &kernels) {
  json out = json::array();
  for (const auto &kernel : kernels) out.push_back({{"name", kernel.name}, {"lowered_name", kernel.lowered_name}});
  return out;
}

std::vector<ArtifactImage> parse_images(const json &list, const std::string &source) {
  const fs::path file(source);
  if (!list.is_array()) corrupt_entry_file(file, "\"images\" is " + support::describe_json(list) + ", not a list");
  std::vector<ArtifactImage> images;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json &item = list[i];
    const std::string where = "images[" + std::to_string(i) + "]";
    ArtifactImage image;
    image.file = text(item, "file", file, where);
    image.kind = text(item, "kind", file, where);
    image.digest = text(item, "digest", file, where);
    image.size = byte_count(item, "size", file, where);
    const std::string arch = text(item, "arch", file, where);
    try {
      image.arch = Arch::parse(arch);
      if (const auto contains = item.find("contains"); contains != item.end()) {
        if (!contains->is_array()) corrupt_entry_file(file, where + ".contains is " + support::describe_json(*contains) + ", not a list");
        for (const auto &each : *contains) {
          if (!each.is_string()) corrupt_entry_file(file, where + ".contains holds " + support::describe_json(each) + ", not an arch name");
          image.contains.push_back(Arch::parse(each.get<std::string>()));
        }
      }
    } catch (const UsageError &error) {
      corrupt_entry_file(file, "image " + image.file.substr(0, 80) + ": " + error.what());
    }
    if (!is_valid_name(image.file)) corrupt_entry_file(file, "image file name \"" + image.file.substr(0, 80) + "\" is not a plain name");
    if (!is_valid_key(image.digest)) corrupt_entry_file(file, "image " + image.file + ": digest is not 32 lower-case hex digits");
    if (image.kind == "cubin") {
      if (image.arch.kind != Arch::Kind::sass) corrupt_entry_file(file, "image " + image.file + ": a cubin's arch must be sm_XY");
    } else if (image.kind == "ptx") {
      if (image.arch.kind != Arch::Kind::ptx) corrupt_entry_file(file, "image " + image.file + ": PTX's arch must be compute_XY");
    } else if (image.kind == "fatbin") {
      if (image.contains.empty()) corrupt_entry_file(file, "image " + image.file + ": a fatbin must list the archs it contains");
    } else {
      corrupt_entry_file(file, "image " + image.file + ": unknown kind \"" + image.kind.substr(0, 40) + "\"");
    }
    images.push_back(std::move(image));
  }
  return images;
}

std::vector<ArtifactKernel> parse_kernels(const json &list, const std::string &source) {
  const fs::path file(source);
  if (!list.is_array()) corrupt_entry_file(file, "\"kernels\" is " + support::describe_json(list) + ", not a list");
  std::vector<ArtifactKernel> kernels;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "kernels[" + std::to_string(i) + "]";
    ArtifactKernel kernel{text(list[i], "name", file, where), text(list[i], "lowered_name", file, where)};
    if (kernel.lowered_name.empty() || kernel.lowered_name.find('\0') != std::string::npos) {
      corrupt_entry_file(file, "kernel \"" + kernel.name.substr(0, 80) + "\" has no lowered name");
    }
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

bool entry_files_present(const fs::path &entry_dir, const EntryMeta &meta) {
  boost::system::error_code error;
  if (!fs::is_regular_file(entry_dir / meta.file, error)) return false;
  for (const auto &image : meta.images) {
    if (!fs::is_regular_file(entry_dir / image.file, error)) return false;
  }
  return true;
}

namespace {

// Whether the file has the digest; a missing file or one that is not regular is damage (false),
// while an I/O error (EACCES, EIO) says nothing about the bytes and propagates as IoError.
// Streamed, not mapped: EIO then is an error, not a SIGBUS.
bool has_digest(const fs::path &file, const std::string &digest) {
  int raw = -1;
  try {
    raw = files::open_regular(file, files::FileOrigin::store);
  } catch (const NotFoundError &) {
    return false;
  } catch (const IntegrityError &) {
    return false;
  }
  const files::UniqueFd fd(raw);
  return files::Hasher().add_fd(fd.get(), file).hex() == digest;
}

}  // namespace

bool entry_files_intact(const fs::path &entry_dir, const EntryMeta &meta) {
  if (!has_digest(entry_dir / meta.file, meta.digest)) return false;
  for (const auto &image : meta.images) {
    if (!has_digest(entry_dir / image.file, image.digest)) return false;
  }
  return true;
}

void sync_staging(const fs::path &staging_dir) {
  // Every file and directory below, deepest first (generated headers live in a subdirectory).
  for (fs::recursive_directory_iterator it(staging_dir), end; it != end; ++it) files::fsync_path(it->path());
  files::fsync_path(staging_dir);
}

bool place_staging(const fs::path &staging_dir, const fs::path &entry_dir) {
  // The writer's liveness lock goes last, just before the rename, so that a writer killed at
  // any earlier step leaves a directory whose free lock tells the next sweep it is dead.
  const fs::path lock_file = staging_dir / kStagingLockFile;
  if (::unlink(lock_file.c_str()) != 0 && errno != ENOENT) {
    throw IoError("cannot remove " + lock_file.string() + " before committing its directory: " + std::strerror(errno));
  }
  if (::rename(staging_dir.c_str(), entry_dir.c_str()) != 0) {
    const int error = errno;
    if (error == EEXIST || error == ENOTEMPTY) {
      files::remove_tree(staging_dir);
      return false;
    }
    throw IoError("cannot publish " + staging_dir.string() + " as " + entry_dir.string() + ": " +
                  std::strerror(error));
  }
  KILN_FAULT_POINT("staging.after_rename");
  return true;
}

bool commit_staging(const fs::path &staging_dir, const fs::path &entry_dir) {
  sync_staging(staging_dir);
  KILN_FAULT_POINT("staging.after_fsync");
  if (!place_staging(staging_dir, entry_dir)) return false;
  files::fsync_path(entry_dir);  // the lock file's removal
  files::fsync_path(entry_dir.parent_path());
  return true;
}

}  // namespace kiln::store
