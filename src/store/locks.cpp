#include "store/locks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <boost/interprocess/sync/file_lock.hpp>

#include <kiln/errors.hpp>

namespace kiln::store {
namespace {

// One mutex per lock path, for the threads of this process. Entries are never removed:
// a process touches a bounded set of lock files (one per consumer and input key).
std::shared_ptr<std::timed_mutex> process_mutex(const std::string &path) {
  static std::mutex guard;
  static std::map<std::string, std::shared_ptr<std::timed_mutex>> mutexes;
  std::lock_guard<std::mutex> lock(guard);
  auto &slot = mutexes[path];
  if (!slot) slot = std::make_shared<std::timed_mutex>();
  return slot;
}

void ensure_lock_file(const boost::filesystem::path &path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw IoError("cannot open lock file " + path.string() + ": " + std::strerror(errno) +
                  " (check that the store directory is writable by you)");
  }
  ::close(fd);
}

// fcntl's deadlock detection sees a whole process as one owner: while one thread of another
// process waits for a lock held here, asking for a lock that another of its threads holds
// fails with EDEADLK, though nothing is deadlocked (kiln takes an input-key lock before the
// manifest lock, never the reverse). That holder finishes without us: wait and ask again.
void lock_waiting(boost::interprocess::file_lock &file) {
  for (;;) {
    try {
      file.lock();
      return;
    } catch (const boost::interprocess::interprocess_exception &error) {
      if (error.get_native_error() != EDEADLK) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

struct FileLock::Held {
  std::shared_ptr<std::timed_mutex> mutex;
  boost::interprocess::file_lock file;
  ~Held() {
    try {
      file.unlock();
    } catch (...) {
    }
    mutex->unlock();
  }
};

FileLock::FileLock(const boost::filesystem::path &lock_file) {
  auto mutex = process_mutex(lock_file.string());
  ensure_lock_file(lock_file);
  mutex->lock();
  try {
    boost::interprocess::file_lock file(lock_file.c_str());
    lock_waiting(file);
    held_.reset(new Held{mutex, std::move(file)});
  } catch (const boost::interprocess::interprocess_exception &error) {
    mutex->unlock();
    throw IoError("cannot lock " + lock_file.string() + ": " + error.what());
  }
}

std::unique_ptr<FileLock> FileLock::try_acquire(const boost::filesystem::path &lock_file) {
  auto mutex = process_mutex(lock_file.string());
  ensure_lock_file(lock_file);
  if (!mutex->try_lock()) return nullptr;
  try {
    boost::interprocess::file_lock file(lock_file.c_str());
    if (!file.try_lock()) {
      mutex->unlock();
      return nullptr;
    }
    std::unique_ptr<FileLock> lock(new FileLock());
    lock->held_.reset(new Held{mutex, std::move(file)});
    return lock;
  } catch (const boost::interprocess::interprocess_exception &error) {
    mutex->unlock();
    throw IoError("cannot lock " + lock_file.string() + ": " + error.what());
  }
}

FileLock::~FileLock() = default;
FileLock::FileLock(FileLock &&) noexcept = default;
FileLock &FileLock::operator=(FileLock &&) noexcept = default;

}  // namespace kiln::store
