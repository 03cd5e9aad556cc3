// kiln: cooperative cancellation of builds (kills the compilers a build started).
#pragma once

#include <atomic>
#include <memory>

namespace kiln {

// Set from any thread or from a signal handler (lock-free store); polled by the build.
// A token made with a parent also reads as cancelled when its parent is, so a build can
// cancel its own work on failure without touching the caller's token.
class CancelToken {
 public:
  explicit CancelToken(const CancelToken *parent = nullptr) noexcept : parent_(parent) {}
  CancelToken(const CancelToken &) = delete;
  CancelToken &operator=(const CancelToken &) = delete;

  void cancel() noexcept { flag_.store(true, std::memory_order_release); }
  bool cancelled() const noexcept {
    return flag_.load(std::memory_order_acquire) || (parent_ != nullptr && parent_->cancelled());
  }

 private:
  static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler sets the flag");
  std::atomic<bool> flag_{false};
  const CancelToken *parent_;
};

// For a command-line host: while alive, SIGINT and SIGTERM cancel `token` instead of killing the
// process (a second Ctrl-C just cancels again), so that Ctrl-C stops a build and the compilers
// it started. Restores the previous handlers (and a previously installed CancelOnSignals'
// token) on destruction. Create and destroy on one thread, nested LIFO if nested at all.
class CancelOnSignals {
 public:
  explicit CancelOnSignals(CancelToken &token);
  ~CancelOnSignals();
  CancelOnSignals(const CancelOnSignals &) = delete;
  CancelOnSignals &operator=(const CancelOnSignals &) = delete;

 private:
  struct Saved;  // the previous token and handlers
  std::unique_ptr<Saved> saved_;
};

}  // namespace kiln
