// Code runs only from a store owned by the user (or root) and not writable by others.
#pragma once

#include <cstdint>

#include <string>

#include <boost/filesystem/path.hpp>

#include "files/file_identity.hpp"

namespace kiln::files {

// Checks `file` and every directory from its parent up to and including `store_root`: each
// must be owned by the effective user or root and not writable by group or others, and
// `file` must be a regular file and every directory a real directory (no symlinks inside a
// store: the root is resolved once, at start-up). Throws IntegrityError naming the path, its
// owner/mode and the fix (chmod go-w / chown; for a symlink: replace it). Called before any
// code from the store is loaded.
void check_safe_to_execute(const boost::filesystem::path &file, const boost::filesystem::path &store_root);

// The same, also giving the identity of the file the check saw (its lstat), so a caller can
// tell whether it still holds what it read from that file before.
void check_safe_to_execute(const boost::filesystem::path &file, const boost::filesystem::path &store_root,
                           FileIdentity *identity);

// The file alone (its lstat: a regular file, owned by you or root, not writable by others),
// without the directory walk, giving its identity: for a caller that already holds bytes it
// read from this file under the full check and only needs to know they are still the file's.
void check_file_safe(const std::string &file, FileIdentity *identity);

// The rule of check_directories for a writer: `dir` and every directory above it up to and
// including `store_root` must be real directories owned by the effective user or root and not
// writable by group or others. A store others can write is refused for writing as it is for
// loading: a co-user could plant staging directories for kiln's sweeps to remove, or move
// kiln's staging directories under it. Throws IntegrityError naming the directory and the fix.
void check_safe_to_write(const boost::filesystem::path &dir, const boost::filesystem::path &store_root);

// The same rules for a file that decides what runs without being code itself (manifest.json,
// meta.json, identity.json): whoever can write it can point a name at other code or roll an
// artifact back. Throws IntegrityError naming the path and the fix; NotFoundError when absent.
void check_store_file_safe(const std::string &file, FileIdentity *identity);

// The bytes of such a file (at most max_bytes), read through a descriptor that passed those
// rules itself: opened without following a link (a symlink gets the rule's own message), a
// regular file, owned by you or root, not writable by others. `identity` is the descriptor's:
// what was checked is what was read, in one open and no stat of the path. NotFoundError when
// absent; the open's own typed errors (a FIFO, a device, too large, EACCES) name the path.
std::string read_store_record(const boost::filesystem::path &file, std::uint64_t max_bytes, FileIdentity *identity);

// The same for a file already opened with O_NOFOLLOW as `fd` (the descriptor that will be
// loaded): its fstat replaces the file's lstat.
void check_safe_to_execute(int fd, const boost::filesystem::path &file, const boost::filesystem::path &store_root);

// The two halves of that check, for the plugin loader, which walks the directories only for a
// file it has not verified before (load/verify.hpp): the descriptor's file alone (fstat),
// giving its identity (and, where `links` is given, its link count from the same fstat) ...
FileIdentity check_fd_safe_to_execute(int fd, const std::string &file, std::uint64_t *links = nullptr);
// ... and every directory from the file's parent up to and including store_root.
void check_directories(const boost::filesystem::path &file, const boost::filesystem::path &store_root);

}  // namespace kiln::files
