#include "swap/deadline.hpp"

#include <thread>
#include <utility>

namespace kiln::swap_detail {

bool PluginCall::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !done_;
}

bool PluginCall::wait(std::chrono::milliseconds limit) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return returned_.wait_for(lock, limit, [this] { return done_; });
}

std::string call_with_deadline(std::chrono::milliseconds limit, std::function<std::string()> body,
                               std::shared_ptr<PluginCall> *stuck) {
  if (limit.count() <= 0) return body();
  auto call = std::make_shared<PluginCall>();
  // One thread per call rather than a long-lived worker: a worker stuck in plugin code could not
  // serve the next call anyway, and swaps are rare next to a thread's start (tens of microseconds).
  std::thread worker([call, body = std::move(body)] {
    std::string result;
    std::exception_ptr error;
    try {
      result = body();
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(call->mutex_);
      call->result_ = std::move(result);
      call->error_ = std::move(error);
      call->done_ = true;
    }
    call->returned_.notify_all();
  });
  std::unique_lock<std::mutex> lock(call->mutex_);
  if (!call->returned_.wait_for(lock, limit, [&] { return call->done_; })) {
    lock.unlock();
    // The thread cannot be joined while it is inside the plugin, maybe for ever; detached, it
    // owns `call` and `body` and ends on its own once the plugin returns.
    worker.detach();
    *stuck = std::move(call);
    return std::string();
  }
  lock.unlock();
  worker.join();
  if (call->error_) std::rethrow_exception(call->error_);
  return std::move(call->result_);
}

}  // namespace kiln::swap_detail
