// The plugin ABI headers (abi/kiln) compiled into kiln, and the directory builds include them
// from. A kiln that was installed, moved or had its source tree deleted builds exactly as before:
// it never reads the tree it was built from (docs/install.md "To a prefix").
#pragma once

#include <cstddef>
#include <string>

#include <boost/filesystem/path.hpp>

namespace kiln::builder {

struct EmbeddedFile {
  const char *path;  // relative to the ABI include directory: "kiln/plugin.h"
  const char *bytes;
  std::size_t size;
};

// Generated at build time from abi/kiln (cmake/KilnEmbedAbi.cmake), sorted by path.
const EmbeddedFile *embedded_abi_begin();
const EmbeddedFile *embedded_abi_end();

// The digest of the embedded headers, computed as abi_headers_digest computes a directory's,
// so that a build's key does not depend on where the headers were read from.
const std::string &embedded_abi_digest();

// The include directory builds use, found without touching the disk (plans and hits need only
// its digest): KILN_ABI_DIR when set (a developer's ABI tree), else <cache_root>/abi/<digest>,
// where write_embedded_abi puts the embedded headers.
struct AbiHeaders {
  std::string dir;
  bool embedded = false;  // dir is the embedded headers' copy, written before a compile
};
AbiHeaders abi_headers_for(const boost::filesystem::path &cache_root);

// Before a compile: writes the embedded headers, read-only, to `dir` unless a copy with their
// bytes is there (staged and renamed, so a reader never sees half of it; a copy whose bytes
// differ is moved aside and written again; leftovers of earlier writers are swept). Throws
// IoError naming the directory.
void write_embedded_abi(const std::string &dir);

}  // namespace kiln::builder
