// The generation table's file, <writable cache>/swap/generations: opened, checked, replaced when
// damaged or foreign, and read and written with pread/pwrite under an open-file-description
// lock. It knows the file's header and size, not what the table keeps after it
// (generations.cpp).
//
// Why not a shared mapping (what the table was first): any process of the same user may
// truncate the file in place (`> generations`, a restore, a careless script), and touching a
// mapped page past the new end raises SIGBUS in every process mapping it -- a controller would
// die because of a file. pread past the end just returns short, which is answered like any
// other damage: the file is replaced and watchers reopen it. The price is three system calls
// per poll of the watcher thread (lock, pread, unlock), never on a control thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <kiln/log.hpp>

#include "files/unique_fd.hpp"

namespace kiln::swap {

// The file's first words: what it is and the shape it was made with.
struct GenerationsHeader {
  std::uint64_t magic, layout, slots, records, size, reserved[3];
};

// The shape the table expects; a file made with another one is replaced.
struct GenerationsShape {
  std::uint64_t layout_version = 0;
  std::uint64_t slots = 0;
  std::uint64_t records = 0;
  std::size_t bytes = 0;  // the whole file, header included
};

class GenerationsFile {
 public:
  // Opens <cache_dir>/swap/generations, creating it (or replacing one that is not trusted: a
  // symlink, FIFO, another owner, group/other-writable, another size, magic or shape). IoError
  // when that cannot be done.
  static std::unique_ptr<GenerationsFile> open(const std::string &cache_dir, const GenerationsShape &shape,
                                               const LogCallback &log);
  GenerationsFile(const GenerationsFile &) = delete;
  GenerationsFile &operator=(const GenerationsFile &) = delete;

  const std::string &path() const noexcept { return path_; }
  // False once another process replaced the file opened here, or once a read or write of it
  // came back short (truncated in place). One stat call.
  bool current() const noexcept;

  // Holds the file for one operation: this process's other threads by a mutex (an open file
  // description's lock does not exclude its own holder), other processes by an OFD record lock
  // on the whole file -- shared to read, exclusive to change. A forked child first opens the
  // file anew: the description it inherited, and its lock, are its parent's too. The kernel drops the lock of a
  // process that dies, so a crash leaves no lock behind.
  class Hold {
   public:
    explicit operator bool() const noexcept { return held_; }
    ~Hold();
    Hold(Hold &&other) noexcept;
    Hold &operator=(Hold &&) = delete;

   private:
    friend class GenerationsFile;
    Hold(const GenerationsFile *file, std::unique_lock<std::mutex> lock) noexcept;
    const GenerationsFile *file_ = nullptr;
    std::unique_lock<std::mutex> lock_;
    bool held_ = false;
  };
  // Waits at most about two seconds (a process stopped while it holds the lock must not stall
  // the caller); an empty Hold when the lock was not had by then.
  Hold hold(bool exclusive) const noexcept;

  // `bytes` at `offset`, under a Hold. False when the file is shorter now (truncated in place)
  // or cannot be read or written; current() is false from then on.
  bool read(std::size_t offset, void *out, std::size_t bytes) const noexcept;
  bool write(std::size_t offset, const void *in, std::size_t bytes) const noexcept;

 private:
  GenerationsFile() = default;
  void unlock() const noexcept;
  bool reopen_after_fork() const noexcept;  // under mutex_
  std::string path_;
  mutable files::UniqueFd fd_;
  mutable pid_t opened_by_ = 0;  // the process that opened fd_: another one (a fork) reopens
  dev_t device_ = 0;
  ino_t inode_ = 0;
  mutable std::mutex mutex_;
  mutable std::atomic<bool> short_io_{false};
};

// Logs when `log` is set; a throwing callback is ignored (the table's callers are noexcept).
void safe_log(const LogCallback &log, LogLevel level, const std::string &line) noexcept;

}  // namespace kiln::swap
