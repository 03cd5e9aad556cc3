// Exclusive locks that the OS releases when their holder dies.
#pragma once

#include <chrono>
#include <memory>

#include <boost/filesystem/path.hpp>

namespace kiln::files {

// Holds an exclusive lock on `lock_file` for its lifetime.
//
// Linux open file description (OFD) locks, fcntl F_OFD_SETLK: the lock belongs to the
// descriptor this object opened, not to the process. So threads of one process exclude each
// other through the kernel exactly as processes do (no in-process mutex), and opening or
// closing the same file elsewhere in the process (another thread, a sweeper, a host library)
// can never release it, which POSIX record locks (Boost.Interprocess file_lock) do on *any*
// close of the file. Every holder or waiter owns one descriptor, closed at release: nothing
// accumulates in a long-running process. OFD locks conflict with POSIX record locks, so older
// kilns that lock the same files with Boost.Interprocess still exclude and are excluded.
// The kernel drops the lock when the holder dies. Descriptors are O_CLOEXEC; a child forked
// without exec shares the descriptor, which is why release unlocks explicitly before closing.
class FileLock {
 public:
  explicit FileLock(const boost::filesystem::path &lock_file);  // creates it if missing; blocks until held
  ~FileLock();
  FileLock(FileLock &&other) noexcept;
  FileLock &operator=(FileLock &&other) noexcept;
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;

  // nullptr when another holder (thread or process) has it.
  static std::unique_ptr<FileLock> try_acquire(const boost::filesystem::path &lock_file);
  // Waits at most `timeout` (polling, so a waiter can also check for cancellation in between).
  static std::unique_ptr<FileLock> try_acquire_for(const boost::filesystem::path &lock_file,
                                                   std::chrono::milliseconds timeout);
  // Never creates the file: nullptr when it is held elsewhere or (then *missing is set) absent.
  static std::unique_ptr<FileLock> try_acquire_existing(const boost::filesystem::path &lock_file, bool *missing);
  // Creates `lock_file`, which must not exist, and returns it held: it becomes visible under
  // its name only once held (made under a temporary name, locked, then renamed into place),
  // so that no one can ever find it there unheld.
  static FileLock create_held(const boost::filesystem::path &lock_file);

  bool held() const noexcept { return fd_ >= 0; }

 private:
  explicit FileLock(int fd) noexcept : fd_(fd) {}
  void release() noexcept;
  int fd_ = -1;
};

}  // namespace kiln::files
