// CancelOnSignals (include/kiln/cancel.hpp): Ctrl-C cancels a build instead of killing its host.
#include <kiln/cancel.hpp>

#include <signal.h>

#include <cerrno>

namespace kiln {
namespace {

std::atomic<CancelToken *> signal_token{nullptr};
static_assert(std::atomic<CancelToken *>::is_always_lock_free, "read in a signal handler");

extern "C" void kiln_cancel_on_signal(int) {
  const int saved_errno = errno;
  if (CancelToken *token = signal_token.load()) token->cancel();
  errno = saved_errno;
}

}  // namespace

struct CancelOnSignals::Saved {
  CancelToken *token = nullptr;
  struct sigaction on_int {};
  struct sigaction on_term {};
};

CancelOnSignals::CancelOnSignals(CancelToken &token) : saved_(std::make_unique<Saved>()) {
  saved_->token = signal_token.exchange(&token);
  struct sigaction action {};
  action.sa_handler = kiln_cancel_on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, &saved_->on_int);
  ::sigaction(SIGTERM, &action, &saved_->on_term);
}

CancelOnSignals::~CancelOnSignals() {
  ::sigaction(SIGINT, &saved_->on_int, nullptr);
  ::sigaction(SIGTERM, &saved_->on_term, nullptr);
  signal_token.store(saved_->token);
}

}  // namespace kiln
