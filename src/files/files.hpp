// Crash-safe file primitives: every write is temp file + fsync + rename + fsync(dir).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <string_view>

#include <sys/stat.h>

#include <boost/filesystem/path.hpp>

namespace kiln::files {

namespace fs = boost::filesystem;

// Throws IoError "<what> <path>: <strerror(error)>" and the fix for that errno (a full disk, a
// read-only file system, permissions).
[[noreturn]] void throw_io(const std::string &what, const fs::path &path, int error);

// Whose file kiln is reading decides the error when it is not what a file should be: a store
// file (manifest, meta.json, identity.json, bykey pointer) -> IntegrityError (the store was
// altered); a caller's input (recipe, source, header, plugin to publish) -> UsageError.
enum class FileOrigin { store, input };

inline constexpr std::uint64_t kNoSizeLimit = std::numeric_limits<std::uint64_t>::max();
// Cap for the JSON files kiln reads (manifest, meta.json, identity.json, recipe): far above
// anything kiln writes, far below what would exhaust memory.
inline constexpr std::uint64_t kMaxJsonFileBytes = 64ull << 20;

// Opens a file for reading without ever blocking (a FIFO or a device in its place would hang
// the host) and refuses anything but a regular file, or one larger than max_bytes. Returns the
// descriptor (the caller owns it). Throws NotFoundError when absent, IoError when it cannot be
// opened (EACCES, EIO, ELOOP for a link under O_NOFOLLOW ...), and the origin's type for a wrong
// kind or size; all name the path. `opened`, when given, receives the descriptor's fstat;
// `extra_flags` are or'ed into open's (O_NOFOLLOW).
int open_regular(const fs::path &file, FileOrigin origin, std::uint64_t max_bytes = kNoSizeLimit,
                 struct stat *opened = nullptr, int extra_flags = 0);

// Read a whole regular file (open_regular's rules and errors; also refused when it grows past
// max_bytes while being read). `opened`, when given, receives the fstat of the descriptor read:
// a caller checking the file's owner or mode checks the very file whose bytes it got.
std::string read_file(const fs::path &file, FileOrigin origin = FileOrigin::store,
                      std::uint64_t max_bytes = kNoSizeLimit, struct stat *opened = nullptr, int extra_flags = 0);

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

// The same for content that arrives in pieces (a download, an archive member), never held
// whole: the file is created exclusively, filled by append(), and close() reports a failed
// close. Throws IoError naming the file.
class StagingFileWriter {
 public:
  StagingFileWriter(const fs::path &file, unsigned mode);
  ~StagingFileWriter();
  StagingFileWriter(const StagingFileWriter &) = delete;
  StagingFileWriter &operator=(const StagingFileWriter &) = delete;
  void append(const char *data, std::size_t size);
  void close();
  std::uint64_t written() const { return written_; }
  const fs::path &file() const { return file_; }

 private:
  fs::path file_;
  int fd_ = -1;
  std::uint64_t written_ = 0;
};

// Copy `from` to `to` (which must not exist) and fsync it; throws IoError.
void copy_file_synced(const fs::path &from, const fs::path &to, unsigned mode = 0644);

void fsync_path(const fs::path &path);  // a file or a directory

// Everything written to the file system holding `path` made durable at once (syncfs(2)): one
// flush for many files where each file's fsync would cost a journal commit. Throws IoError
// (EIO, ENOSPC: a write that did not reach the disk) like fsync_path.
void sync_file_system(const fs::path &path);

// Create a directory and its parents, with permissions 0755 whatever the umask (a store
// must not be writable by others, or kiln itself would refuse to run code from it).
void create_directories(const fs::path &dir);

// A name unique to this process and call, for temp files and staging directories.
std::string unique_suffix();

// The names in a directory; none when it is absent or cannot be listed (for sweepers and gc,
// which judge what they find and skip what they cannot see).
std::set<std::string> names_in(const fs::path &dir);
// The same, each name handed to `visit` as it is read: nothing is held, so a directory of a
// million entries costs no memory.
void for_each_name(const fs::path &dir, const std::function<void(const std::string &name)> &visit);

}  // namespace kiln::files
