// The build stamp inside a plugin file's bytes (abi/kiln/stamp.h), read and written without
// running any of the plugin's code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::artifact {

struct FileStamp {
  std::size_t offset = 0;        // of the kiln_build_stamp record in the file
  std::uint32_t abi_version = 0; // the newest ABI version the plugin offers
  std::string content_key;       // 32 characters as found ("000..." when unstamped)
  std::string archs;             // __CUDA_ARCH_LIST__ the plugin was compiled with
};

// Finds the one stamp in `bytes`. Throws AbiError naming `file` when there is none (not a
// kiln plugin) or more than one (ambiguous: refuse rather than guess), or when it is cut off
// or smaller than ABI 1.0 defined it. Fields a newer stamp appends are not read.
FileStamp find_stamp(std::string_view bytes, const std::string &file);

// The stamp at `offset` (where the file's .kiln_stamp section starts), without searching the
// rest of the bytes: for a file whose single stamp was established when it was published or
// built. nullopt when no stamp record starts there.
std::optional<FileStamp> stamp_at(std::string_view bytes, std::size_t offset, const std::string &file);

// The bytes with the stamp's key slot set to `key` (32 hex) — "0"*32 gives the form the
// content key is computed over.
void write_stamp_key(std::string &bytes, const FileStamp &stamp, const std::string &key);

inline const std::string kUnstampedKey(32, '0');

}  // namespace kiln::artifact
