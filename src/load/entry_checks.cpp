#include "load/entry_checks.hpp"

#include <kiln/errors.hpp>
#include <kiln/module.hpp>

#include "artifact/identity_json.hpp"
#include "artifact/arch_claims.hpp"
#include "artifact/model_record.hpp"
#include "artifact/plugin_file.hpp"
#include "files/files.hpp"
#include "store/layout.hpp"

namespace kiln::load {

std::string entry_file_disagreement(const boost::filesystem::path &entry_dir, const store::EntryMeta &meta) {
  if (meta.kind != kKindPlugin) return "";
  const std::string file = (entry_dir / meta.file).string();
  const std::string bytes = files::read_file(file, files::FileOrigin::store);
  artifact::FileStamp stamp;
  try {
    stamp = artifact::stamp_of(bytes, file);
    artifact::check_stamp_abi(stamp, file);
    if (stamp.content_key != meta.content_key) {
      return "plugin " + file + " carries build stamp " + stamp.content_key + ", not its entry's content key " +
             meta.content_key + ": the file belongs to another entry";
    }
  } catch (const AbiError &error) {  // no stamp, two stamps, another ABI major
    return error.what();
  }
  // The archs identity.json records are a claim the file's fat binaries must back: an entry
  // recording sm_80 for a file of sm_90 code would be chosen for a GPU it cannot run on. Its
  // robot models, one the file's .kiln.model section must back: else a host requiring its robot's
  // model would load a plugin generated from another.
  const boost::filesystem::path identity_file = entry_dir / store::kIdentityFile;
  try {
    const ArtifactIdentity identity = artifact::parse_artifact_identity(
        files::read_file(identity_file, files::FileOrigin::store, files::kMaxJsonFileBytes), identity_file.string());
    artifact::check_recorded_archs(bytes, stamp, identity.archs, file);
    artifact::check_recorded_models(bytes, identity.models, file);
  } catch (const IntegrityError &error) {
    return error.what();
  }
  return "";
}

}  // namespace kiln::load
