#include "load/entry_checks.hpp"

#include <kiln/errors.hpp>

#include "load/plugin_file.hpp"
#include "store/files.hpp"

namespace kiln::load {

std::string entry_file_disagreement(const boost::filesystem::path &entry_dir, const store::EntryMeta &meta) {
  if (meta.kind != "plugin") return "";
  const std::string file = (entry_dir / meta.file).string();
  const std::string bytes = store::read_file(file, store::FileOrigin::store);
  try {
    const FileStamp stamp = stamp_of(bytes, file);
    check_stamp_abi(stamp, file);
    if (stamp.content_key != meta.content_key) {
      return "plugin " + file + " carries build stamp " + stamp.content_key + ", not its entry's content key " +
             meta.content_key + ": the file belongs to another entry";
    }
  } catch (const AbiError &error) {  // no stamp, two stamps, another ABI major
    return error.what();
  }
  return "";
}

}  // namespace kiln::load
