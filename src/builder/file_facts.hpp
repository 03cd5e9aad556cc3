// Facts kiln learns about a file once and remembers -- an executable's `--version` and
// `--list-gpu-code` output (toolchain.hpp), a generator tool's digest (tool_digests.hpp) -- in
// one JSON file, <cache>/toolchain.json, each under the file's real path and identity (device,
// inode, size, mtime, ctime): replacing or touching the file forgets them. A missing, corrupt
// or unwritable memo is only a cache: it reads as empty and a failed write is ignored; two
// writers at once may drop each other's new facts, which are learnt again next time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>
#include <nlohmann/json.hpp>

#include "files/file_identity.hpp"

namespace kiln::builder {

struct FileKey {
  std::string real_path;
  files::FileIdentity identity;
  friend bool operator==(const FileKey &a, const FileKey &b) {
    return a.real_path == b.real_path && a.identity == b.identity;
  }
};

// The file's real path and identity. Throws IoError when it cannot be resolved or stat'ed.
FileKey file_key_of(const std::string &file);

// One reading of the memo file; put() collects facts that save() merges into it.
class FileFacts {
 public:
  explicit FileFacts(const boost::filesystem::path &memo_file);  // empty: nothing read or written
  std::optional<std::string> get(const FileKey &key, const char *field) const;
  void put(const FileKey &key, const std::string &field, std::string value);
  // Writes the memo atomically with what put() added, dropping entries whose file changed.
  void save();

 private:
  struct Fresh {
    FileKey key;
    std::string field;
    std::string value;
  };
  boost::filesystem::path file_;
  nlohmann::json entries_;
  std::vector<Fresh> fresh_;
};

}  // namespace kiln::builder
