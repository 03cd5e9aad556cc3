// Exclusive locks that the OS releases when their holder dies.
#pragma once

#include <memory>

#include <boost/filesystem/path.hpp>

namespace kiln::store {

// Holds an exclusive lock on `lock_file` (created if missing) for its lifetime.
// A Boost.Interprocess file_lock (fcntl) serialises processes and is dropped by the kernel
// when the holder exits or is killed, so a crashed holder never hangs the others. fcntl locks
// belong to the process, not the thread, so a per-path in-process mutex serialises threads.
class FileLock {
 public:
  explicit FileLock(const boost::filesystem::path &lock_file);  // blocks until held
  ~FileLock();
  FileLock(FileLock &&) noexcept;
  FileLock &operator=(FileLock &&) noexcept;
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;

  // nullptr when another thread or process holds it.
  static std::unique_ptr<FileLock> try_acquire(const boost::filesystem::path &lock_file);

 private:
  struct Held;
  FileLock() = default;
  std::unique_ptr<Held> held_;
};

}  // namespace kiln::store
