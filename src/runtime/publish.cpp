#include <cuda.h>  // CUDA_VERSION: the toolkit kiln was built with, the default PTX writer

#include <algorithm>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>
#include <kiln/version.hpp>

#include "artifact/arch_claims.hpp"
#include "artifact/identity_json.hpp"
#include "artifact/model_record.hpp"
#include "artifact/plugin_file.hpp"
#include "artifact/stamp.hpp"
#include "runtime/state.hpp"
#include "files/digest.hpp"
#include "files/files.hpp"
#include "store/names.hpp"
#include "store/storage.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

namespace fs = boost::filesystem;

std::string joined_archs(const std::vector<Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "" : ",") + arch.to_string();
  return text;
}

}  // namespace

void PublishRequest::set_archs(std::string_view text) {
  archs.clear();
  host_only = text == "none";
  if (!host_only && !text.empty()) archs = Arch::parse_list(text);
}

PublishResult Runtime::publish(const PublishRequest &request) try {
  store::validate_name("consumer", request.consumer);
  store::validate_name("artifact name", request.name);
  // Every later load reads it back as 0 ... 2^31-1: refuse here what would publish an entry
  // no load accepts.
  if (request.cuda_toolkit_version != 0 && (request.cuda_toolkit_version < 1000 || request.cuda_toolkit_version > 999999)) {
    throw UsageError("cuda_toolkit_version (--cuda-toolkit) " + std::to_string(request.cuda_toolkit_version) +
                     " is not a CUDA version: write major*1000 + minor*10 (12060 for CUDA 12.6), or 0 for the "
                     "toolkit kiln was built with");
  }
  const fs::path source(request.artifact_file);
  std::string bytes;
  try {
    bytes = files::read_file(source, files::FileOrigin::input);
  } catch (const NotFoundError &) {
    throw NotFoundError("artifact file " + source.string() + " does not exist: pass the path of a built plugin (.so)");
  }
  const std::string file_name = source.filename().string();
  if (!store::is_valid_name(file_name)) store::validate_name("artifact file name", file_name);

  // Everything knowable without running the plugin's code (ELF machine and completeness, the
  // unload rules, the stamp and its ABI): refused now rather than at every later load.
  const artifact::FileStamp stamp = artifact::check_plugin_file(bytes, source.string());
  if (request.host_only && !request.archs.empty()) {
    throw UsageError("publish: host_only (--arch none) and archs " + joined_archs(request.archs) +
                     " contradict each other: claim one or the other");
  }
  // The archs are a claim the file's own fat binaries must back (docs/architecture.md §5).
  const artifact::ArchClaim claim = !request.archs.empty() ? artifact::ArchClaim::listed
                                : request.host_only    ? artifact::ArchClaim::host_only
                                                       : artifact::ArchClaim::from_file;
  const std::string claimant = claim == artifact::ArchClaim::host_only ? std::string("--arch none (host-only)")
                                                                  : "--arch " + joined_archs(request.archs);
  std::vector<Arch> archs = artifact::backed_archs(bytes, artifact::read_elf(bytes, source.string()), stamp, claim,
                                               request.archs, claimant, source.string());
  std::sort(archs.begin(), archs.end(), [](const Arch &a, const Arch &b) { return a.to_string() < b.to_string(); });
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());

  ArtifactIdentity identity;
  identity.key_schema = kKeySchema;
  identity.artifact_schema = kArtifactSchema;
  identity.abi_version = stamp.abi_version;
  identity.archs = archs;
  identity.cuda_toolkit_version = request.cuda_toolkit_version != 0 ? request.cuda_toolkit_version : CUDA_VERSION;
  // The robot models, from the file's own .kiln.model section (the key covers its bytes).
  identity.models = artifact::read_models(bytes, source.string());
  identity.provenance = request.provenance;
  identity.provenance["published_from"] = fs::absolute(source).string();
  identity.provenance["stamp_archs"] = stamp.archs;
  identity.provenance["kiln_version"] = kVersion;

  // The content key covers the file with its stamp slot zeroed plus everything that decides
  // whether it may load; the key is then written into the slot of the stored copy.
  artifact::write_stamp_key(bytes, stamp, artifact::kUnstampedKey);
  files::Hasher hasher;
  hasher.add_field("key_schema", std::to_string(kKeySchema))
      .add_field("artifact_schema", std::to_string(kArtifactSchema))
      .add_field("kind", kKindPlugin)
      .add_field("abi_version", std::to_string(stamp.abi_version))
      .add_field("archs", joined_archs(archs))
      .add_field("cuda_toolkit_version", std::to_string(identity.cuda_toolkit_version))
      .add_field("file_name", file_name)
      .add_field("bytes", bytes);
  const std::string content_key = hasher.hex();
  artifact::write_stamp_key(bytes, stamp, content_key);
  const std::string digest = files::digest_hex(bytes);

  const store::Storage &storage = *state_->storage;
  store::Staging staging = storage.stage(request.consumer, state_->options.log);
  staging.write(file_name, bytes, 0755);
  staging.write_records({content_key, kKindPlugin, file_name, digest, bytes.size(), store::utc_now_iso8601(), {}, {}},
                        artifact::identity_file_text(identity));
  PublishResult result;
  result.content_key = content_key;
  result.entry_dir = storage.writable().layout(request.consumer).entry(content_key).string();
  result.file = (fs::path(result.entry_dir) / file_name).string();
  result.reused = !storage.commit(std::move(staging), {request.consumer, request.name, content_key, "", kKindPlugin, "", ""},
                                  state_->options.log);
  log(LogLevel::info, "published " + request.consumer + "/" + request.name + " as " + content_key +
                          (result.reused ? " (entry existed)" : "") + " in " + storage.writable().root().string());
  return result;
} catch (...) {
  support::rethrow_typed("publishing " + request.consumer + "/" + request.name + " from " + request.artifact_file);
}

}  // namespace kiln
