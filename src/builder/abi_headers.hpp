// The plugin ABI headers (abi/kiln) compiled into kiln, and the directory builds include them
// from. A kiln that was installed, moved or had its source tree deleted builds exactly as before:
// it never reads the tree it was built from (README "Install").
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

// The include directory builds use: KILN_ABI_DIR when set (a developer's ABI tree), else the
// embedded headers written once, read-only, to <cache_root>/abi/<digest> (staged and renamed,
// so a reader never sees half of it; a damaged copy is replaced). A cache that cannot be written
// is left to the build's own staging to report. For a plan (which writes nothing), write=false
// gives the same directory without creating it.
std::string abi_include_dir(const boost::filesystem::path &cache_root, bool write = true);

}  // namespace kiln::builder
