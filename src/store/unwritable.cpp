#include "store/unwritable.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include <kiln/errors.hpp>

namespace kiln::store {

void throw_if_unwritable(const StoreLocation &store) {
  // The root, or the nearest directory above it that exists (where mkdir would need to write).
  fs::path dir = store.root;
  while (!dir.empty() && ::faccessat(AT_FDCWD, dir.c_str(), F_OK, AT_EACCESS) != 0 && errno == ENOENT) {
    dir = dir.parent_path();
  }
  if (dir.empty() || ::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) == 0) return;
  const int why = errno;
  const std::string fix =
      store.origin == "--into" ? "pass --into a directory you can write" : "set KILN_CACHE_DIR to a writable directory";
  throw IoError("the writable store " + store.root.string() + " (from " + store.origin + ") cannot be written: " +
                (dir == store.root ? std::string() : dir.string() + ": ") + std::strerror(why) + "; " + fix);
}

}  // namespace kiln::store
