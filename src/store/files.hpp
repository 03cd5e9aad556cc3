// Crash-safe file primitives: every write is temp file + fsync + rename + fsync(dir).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <boost/filesystem/path.hpp>

namespace kiln::store {

namespace fs = boost::filesystem;

// Read a whole file; throws NotFoundError when absent, IoError otherwise (both name the path).
std::string read_file(const fs::path &file);

// Replace `file` with `content` atomically: readers see the old or the new bytes, never a mix,
// and after return the new bytes survive a power cut. mode is the new file's permission bits.
void write_file_atomic(const fs::path &file, std::string_view content, unsigned mode = 0644);

// write_file_atomic's temp files for a file named `file_name` are named
// "." + file_name + ".tmp-" + unique suffix, next to it. A writer killed between creating and
// renaming its temp leaves one behind.
std::string atomic_temp_prefix(const std::string &file_name);

// A temp untouched this long is no writer's: write_file_atomic renames it as soon as it is
// written and fsynced. Guards, besides each file's lock, against a writer that writes a file
// without its lock (a race in the build hit path may rewrite a bykey pointer) or lost it.
inline constexpr std::chrono::seconds kTempWriteBound{60};

// Removes the temps of `file` last modified `min_age` ago or earlier (killed writers' leftovers);
// returns how many. Only for a caller holding the lock every writer of `file` holds.
int remove_dead_temps(const fs::path &file, std::chrono::seconds min_age = kTempWriteBound);

// Write a new file inside a private staging directory: no temp file, no fsync, since nothing
// reads staging and commit_staging fsyncs every file once before the rename makes it visible.
void write_staging_file(const fs::path &file, std::string_view content, unsigned mode = 0644);

// Copy `from` to `to` (which must not exist) and fsync it; throws IoError.
void copy_file_synced(const fs::path &from, const fs::path &to, unsigned mode = 0644);

void fsync_path(const fs::path &path);  // a file or a directory

// Create a directory and its parents, with permissions 0755 whatever the umask (a store
// must not be writable by others, or kiln itself would refuse to run code from it).
void create_directories(const fs::path &dir);

// A name unique to this process and call, for temp files and staging directories.
std::string unique_suffix();

}  // namespace kiln::store
