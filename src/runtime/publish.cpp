#include <cuda.h>  // CUDA_VERSION: the toolkit kiln was built with, the default PTX writer

#include <algorithm>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>
#include <kiln/version.hpp>

#include "device/identity_json.hpp"
#include "load/stamp.hpp"
#include "runtime/state.hpp"
#include "store/digest.hpp"
#include "store/entry.hpp"
#include "store/files.hpp"
#include "store/manifest.hpp"
#include "store/names.hpp"
#include "store/sweep.hpp"
#include "support/fault_point.hpp"

namespace kiln {
namespace {

namespace fs = boost::filesystem;

std::string joined_archs(const std::vector<Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "" : ",") + arch.to_string();
  return text;
}

// An existing entry with our key must hold exactly our bytes; a damaged one is moved aside
// (never deleted in place, never trusted) so that the fresh copy can take its name.
bool existing_entry_intact(const fs::path &entry, const std::string &digest) {
  try {
    const store::EntryMeta meta = store::read_entry_meta(entry);
    return meta.digest == digest && store::entry_files_intact(entry, meta);
  } catch (const Error &) {
    return false;
  }
}

}  // namespace

PublishResult Runtime::publish(const PublishRequest &request) {
  store::validate_name("consumer", request.consumer);
  store::validate_name("artifact name", request.name);
  const fs::path source(request.artifact_file);
  std::string bytes;
  try {
    bytes = store::read_file(source);
  } catch (const NotFoundError &) {
    throw NotFoundError("artifact file " + source.string() + " does not exist: pass the path of a built plugin (.so)");
  }
  const std::string file_name = source.filename().string();
  if (!store::is_valid_name(file_name)) store::validate_name("artifact file name", file_name);

  const load::FileStamp stamp = load::find_stamp(bytes, source.string());
  if (KILN_ABI_VERSION_MAJOR_OF(stamp.abi_version) != KILN_ABI_VERSION_MAJOR_OF(kAbiVersion)) {
    throw AbiError(source.string() + " was compiled against plugin ABI " +
                   std::to_string(KILN_ABI_VERSION_MAJOR_OF(stamp.abi_version)) + ".x; this kiln speaks " +
                   std::to_string(KILN_ABI_VERSION_MAJOR_OF(kAbiVersion)) + ".x: rebuild it against this kiln's abi/");
  }

  std::vector<Arch> archs = request.archs;
  std::sort(archs.begin(), archs.end(), [](const Arch &a, const Arch &b) { return a.to_string() < b.to_string(); });
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());

  ArtifactIdentity identity;
  identity.key_schema = kKeySchema;
  identity.artifact_schema = kArtifactSchema;
  identity.abi_version = stamp.abi_version;
  identity.archs = archs;
  identity.cuda_toolkit_version = request.cuda_toolkit_version != 0 ? request.cuda_toolkit_version : CUDA_VERSION;
  identity.provenance = request.provenance;
  identity.provenance["published_from"] = fs::absolute(source).string();
  identity.provenance["stamp_archs"] = stamp.archs;
  identity.provenance["kiln_version"] = kVersion;

  // The content key covers the file with its stamp slot zeroed plus everything that decides
  // whether it may load; the key is then written into the slot of the stored copy.
  load::write_stamp_key(bytes, stamp, load::kUnstampedKey);
  store::Hasher hasher;
  hasher.add_field("key_schema", std::to_string(kKeySchema))
      .add_field("artifact_schema", std::to_string(kArtifactSchema))
      .add_field("kind", "plugin")
      .add_field("abi_version", std::to_string(stamp.abi_version))
      .add_field("archs", joined_archs(archs))
      .add_field("cuda_toolkit_version", std::to_string(identity.cuda_toolkit_version))
      .add_field("file_name", file_name)
      .add_field("bytes", bytes);
  const std::string content_key = hasher.hex();
  load::write_stamp_key(bytes, stamp, content_key);
  const std::string digest = store::digest_hex(bytes);

  const store::ConsumerLayout layout(state_->writable().root, request.consumer);
  store::create_directories(layout.entries());
  store::sweep_dead_staging(layout);
  const fs::path entry = layout.entry(content_key);

  PublishResult result;
  result.content_key = content_key;
  result.entry_dir = entry.string();
  result.file = (entry / file_name).string();
  result.reused = fs::exists(entry) && existing_entry_intact(entry, digest);
  if (!result.reused) {
    if (fs::exists(entry)) {
      const fs::path aside = layout.entries() / (std::string(store::kStagingPrefix) + store::unique_suffix() + "-damaged");
      fs::rename(entry, aside);
      log(LogLevel::warning, "store entry " + entry.string() + " was damaged; moved aside to " + aside.string());
    }
    const fs::path staging = layout.new_staging_dir();
    try {
      store::create_directories(staging);
      store::write_staging_file(staging / file_name, bytes, 0755);
      store::EntryMeta meta{content_key, "plugin", file_name, digest, bytes.size(), store::utc_now_iso8601(), {}, {}};
      store::write_staging_file(staging / store::kMetaFile, store::serialize_entry_meta(meta));
      store::write_staging_file(staging / store::kIdentityFile, device::to_json(identity).dump(2) + "\n");
      result.reused = !store::commit_staging(staging, entry);
    } catch (...) {
      boost::system::error_code ignored;
      fs::remove_all(staging, ignored);
      throw;
    }
  }
  KILN_FAULT_POINT("publish.after_entry");
  store::update_manifest(layout, [&](store::Manifest &manifest) {
    manifest.artifacts[request.name] = {content_key, "", "plugin", store::utc_now_iso8601()};
  });
  log(LogLevel::info, "published " + request.consumer + "/" + request.name + " as " + content_key +
                          (result.reused ? " (entry existed)" : "") + " in " + state_->writable().root.string());
  return result;
}

}  // namespace kiln
