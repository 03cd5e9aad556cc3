// Code runs only from a store owned by the user (or root) and not writable by others.
#pragma once

#include <boost/filesystem/path.hpp>

namespace kiln::store {

// Checks `file` and every directory from its parent up to and including `store_root`: each
// must be owned by the effective user or root and not writable by group or others, and
// `file` must be a regular file (not a symlink). Throws IntegrityError naming the path, its
// owner/mode and the fix (chmod go-w / chown). Called before any code from the store is loaded.
void check_safe_to_execute(const boost::filesystem::path &file, const boost::filesystem::path &store_root);

// The same for a file already opened with O_NOFOLLOW as `fd` (the descriptor that will be
// loaded): its fstat replaces the file's lstat.
void check_safe_to_execute(int fd, const boost::filesystem::path &file, const boost::filesystem::path &store_root);

}  // namespace kiln::store
