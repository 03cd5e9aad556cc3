#include "store/entry.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "store/digest.hpp"
#include "store/files.hpp"
#include "store/names.hpp"
#include "support/fault_point.hpp"

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
    if (const auto images = root.find("images"); images != root.end()) meta.images = parse_images(*images, file.string());
    if (const auto kernels = root.find("kernels"); kernels != root.end()) meta.kernels = parse_kernels(*kernels, file.string());
    if (meta.kind == "images" && meta.images.empty()) corrupt(file, "an \"images\" entry lists no image");
    return meta;
  } catch (const json::exception &error) {
    corrupt(file, error.what());
  }
}

std::string serialize_entry_meta(const EntryMeta &meta) {
  json root = {{"schema", kArtifactSchema}, {"content_key", meta.content_key}, {"kind", meta.kind},
               {"file", meta.file},         {"digest", meta.digest},           {"size", meta.size},
               {"created", meta.created}};
  if (!meta.images.empty()) root["images"] = images_json(meta.images);
  if (!meta.kernels.empty() || meta.kind == "images") root["kernels"] = kernels_json(meta.kernels);
  return root.dump(2) + "\n";
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
  if (!list.is_array()) corrupt(file, "\"images\" is not a list");
  std::vector<ArtifactImage> images;
  try {
    for (const auto &item : list) {
      ArtifactImage image;
      image.file = item.at("file").get<std::string>();
      image.kind = item.at("kind").get<std::string>();
      image.digest = item.at("digest").get<std::string>();
      image.size = item.at("size").get<std::uint64_t>();
      const std::string arch = item.at("arch").get<std::string>();
      try {
        image.arch = Arch::parse(arch);
        if (const auto contains = item.find("contains"); contains != item.end()) {
          for (const auto &each : *contains) image.contains.push_back(Arch::parse(each.get<std::string>()));
        }
      } catch (const UsageError &error) {
        corrupt(file, "image " + image.file.substr(0, 80) + ": " + error.what());
      }
      if (!is_valid_name(image.file)) corrupt(file, "image file name \"" + image.file.substr(0, 80) + "\" is not a plain name");
      if (!is_valid_key(image.digest)) corrupt(file, "image " + image.file + ": digest is not 32 lower-case hex digits");
      if (image.kind == "cubin") {
        if (image.arch.kind != Arch::Kind::sass) corrupt(file, "image " + image.file + ": a cubin's arch must be sm_XY");
      } else if (image.kind == "ptx") {
        if (image.arch.kind != Arch::Kind::ptx) corrupt(file, "image " + image.file + ": PTX's arch must be compute_XY");
      } else if (image.kind == "fatbin") {
        if (image.contains.empty()) corrupt(file, "image " + image.file + ": a fatbin must list the archs it contains");
      } else {
        corrupt(file, "image " + image.file + ": unknown kind \"" + image.kind.substr(0, 40) + "\"");
      }
      images.push_back(std::move(image));
    }
  } catch (const json::exception &error) {
    corrupt(file, std::string("\"images\": ") + error.what());
  }
  return images;
}

std::vector<ArtifactKernel> parse_kernels(const json &list, const std::string &source) {
  const fs::path file(source);
  if (!list.is_array()) corrupt(file, "\"kernels\" is not a list");
  std::vector<ArtifactKernel> kernels;
  try {
    for (const auto &item : list) {
      ArtifactKernel kernel{item.at("name").get<std::string>(), item.at("lowered_name").get<std::string>()};
      if (kernel.lowered_name.empty() || kernel.lowered_name.find('\0') != std::string::npos) {
        corrupt(file, "kernel \"" + kernel.name.substr(0, 80) + "\" has no lowered name");
      }
      kernels.push_back(std::move(kernel));
    }
  } catch (const json::exception &error) {
    corrupt(file, std::string("\"kernels\": ") + error.what());
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

bool entry_files_intact(const fs::path &entry_dir, const EntryMeta &meta) {
  try {
    if (digest_file(entry_dir / meta.file) != meta.digest) return false;
    for (const auto &image : meta.images) {
      if (digest_file(entry_dir / image.file) != image.digest) return false;
    }
    return true;
  } catch (const Error &) {
    return false;
  }
}

bool commit_staging(const fs::path &staging_dir, const fs::path &entry_dir) {
  // Every file and directory below, deepest first (generated headers live in a subdirectory).
  for (fs::recursive_directory_iterator it(staging_dir), end; it != end; ++it) fsync_path(it->path());
  fsync_path(staging_dir);
  KILN_FAULT_POINT("staging.after_fsync");
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
  KILN_FAULT_POINT("staging.after_rename");
  fsync_path(entry_dir.parent_path());
  return true;
}

}  // namespace kiln::store
