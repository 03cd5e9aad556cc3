// kiln: cooperative cancellation of builds (kills the compilers a build started).
#pragma once

#include <atomic>

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

}  // namespace kiln
