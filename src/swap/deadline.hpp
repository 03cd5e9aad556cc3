// Calls into plugin code with a deadline: the call runs on a worker thread of its own while the
// setup thread waits for it up to the step's deadline (SwapOptions::deadlines). A call that does
// not return in time is left running: its worker thread is detached and owns everything the call
// touches besides the Version, which the caller quarantines (never published, never unloaded
// while PluginCall::running()).
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace kiln::swap_detail {

// One call, shared by the setup thread that waits and the worker that runs it.
class PluginCall {
 public:
  // Whether the call is still inside the plugin (a worker that has not returned).
  bool running() const;
  // Waits up to `limit` for it to return; true when it has.
  bool wait(std::chrono::milliseconds limit) const;

 private:
  friend std::string call_with_deadline(std::chrono::milliseconds, std::function<std::string()>,
                                        std::shared_ptr<PluginCall> *);
  mutable std::mutex mutex_;
  mutable std::condition_variable returned_;
  bool done_ = false;
  std::string result_;
  std::exception_ptr error_;
};

// Runs `body` on a new thread and waits up to `limit` for it: returns its result or rethrows
// its exception. A limit of 0 or less is no deadline: `body` runs on the calling thread. On
// expiry it returns nothing and sets `*stuck` to the call still running (its thread detached);
// `body` must then own, or point to what outlives it, everything it uses.
std::string call_with_deadline(std::chrono::milliseconds limit, std::function<std::string()> body,
                               std::shared_ptr<PluginCall> *stuck);

}  // namespace kiln::swap_detail
