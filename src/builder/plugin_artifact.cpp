#include "builder/plugin_artifact.hpp"

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>

#include "builder/backend.hpp"
#include "artifact/elf.hpp"
#include "artifact/model_record.hpp"
#include "artifact/plugin_file.hpp"
#include "artifact/stamp.hpp"
#include "files/digest.hpp"
#include "files/files.hpp"

namespace kiln::builder {

FinishedPlugin finish_plugin_artifact(const boost::filesystem::path &artifact, const std::string &content_key,
                                      const Recipe &recipe, const boost::filesystem::path &build_log) {
  const std::string name = artifact.filename().string();
  const auto refuse = [&](const std::string &why) {
    append_log(build_log, why + "\n");
    throw BuildError(why + "\nNothing was published; fix the sources or build settings of recipe " + recipe.file, why);
  };
  std::string bytes = files::read_file(artifact);
  artifact::FileStamp stamp;
  std::vector<RobotModel> models;
  try {
    const artifact::ElfFacts elf = artifact::read_elf(bytes, artifact.string());
    // The stamp first: a file without one is "not a kiln plugin", the clearest reason there is.
    stamp = artifact::find_stamp(bytes, artifact.string());
    artifact::check_stamp_abi(stamp, artifact.string());
    const std::vector<std::string> problems = artifact::unload_rule_problems(elf);
    if (!problems.empty()) refuse(artifact::describe_unload_problems(name, problems));
    models = artifact::read_models(bytes, artifact.string());
  } catch (const AbiError &error) {  // not a shared object, no stamp (no KILN_PLUGIN), another ABI
    refuse(name + " is not a kiln plugin this kiln can load: " + error.what() +
           "\n(a plugin defines KILN_PLUGIN(...) from kiln/plugin.hpp and compiles against kiln's abi/ headers)");
  } catch (const IntegrityError &error) {  // a cut-off or malformed ELF
    refuse(name + " is not a kiln plugin: " + error.what());
  }
  artifact::write_stamp_key(bytes, stamp, content_key);
  boost::filesystem::remove(artifact);
  files::write_staging_file(artifact, bytes, 0755);
  return {files::digest_hex(bytes), bytes.size(), stamp.abi_version, std::move(models)};
}

void describe_plugin(Produced &produced, const Recipe &recipe, const FinishedPlugin &plugin, int cuda_toolkit_version) {
  produced.kind = kKindPlugin;
  produced.file = recipe.artifact;
  produced.bytes_digest = plugin.bytes_digest;
  produced.size = plugin.size;
  produced.abi_version = plugin.abi_version;
  produced.cuda_toolkit_version = cuda_toolkit_version;
  produced.models = plugin.models;
}

}  // namespace kiln::builder
