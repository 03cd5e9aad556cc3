// Crash-safe file primitives: every write is temp file + fsync + rename + fsync(dir).
#pragma once

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
