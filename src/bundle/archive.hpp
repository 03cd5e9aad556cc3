// libarchive handles, owned; and the container a bundle is: a pax tar compressed with zstd.
#pragma once

#include <memory>

#include <archive.h>
#include <archive_entry.h>

namespace kiln::bundle {

struct ReadArchiveFree {
  void operator()(archive *handle) const noexcept { archive_read_free(handle); }
};
struct WriteArchiveFree {
  void operator()(archive *handle) const noexcept { archive_write_free(handle); }
};
struct EntryFree {
  void operator()(archive_entry *entry) const noexcept { archive_entry_free(entry); }
};
using ReadArchive = std::unique_ptr<archive, ReadArchiveFree>;
using WriteArchive = std::unique_ptr<archive, WriteArchiveFree>;
using ArchiveEntry = std::unique_ptr<archive_entry, EntryFree>;

// libarchive's last message for `handle`, never null.
inline const char *archive_message(archive *handle) {
  const char *message = archive_error_string(handle);
  return message != nullptr ? message : "no detail";
}

}  // namespace kiln::bundle
