// Removing a directory tree that someone else may be changing while it is walked.
#pragma once

#include <boost/filesystem/path.hpp>

namespace kiln::files {

// Removes `dir` and everything under it that the effective user owns, walking with directory
// descriptors (openat with O_NOFOLLOW | O_DIRECTORY, unlinkat), never by path: a subdirectory
// swapped for a symlink mid-walk is unlinked as the link it now is, and nothing outside `dir`
// is touched (Boost 1.74's remove_all follows such a swap). A directory owned by another user is
// neither entered nor removed, nor is a file of another user; nesting deeper than 64 is left
// alone. Never throws: what could not be removed stays for `kiln verify` to report.
// Returns whether `dir` itself is gone (false also when it did not exist).
bool remove_tree(const boost::filesystem::path &dir) noexcept;

}  // namespace kiln::files
