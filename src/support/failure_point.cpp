#include "support/failure_point.hpp"

#include <cstring>
#include <mutex>
#include <new>

namespace kiln::support {
namespace {

struct Armed {
  std::mutex mutex;
  const char *name = nullptr;
  long nth = 1;
  long passes = 0;
  bool fired = false;
};

Armed &state() {
  static Armed armed;
  return armed;
}

}  // namespace

void failure_detail::reached(const char *name) {
  Armed &armed = state();
  std::lock_guard<std::mutex> lock(armed.mutex);
  if (armed.name == nullptr || std::strcmp(armed.name, name) != 0) return;
  if (++armed.passes != armed.nth) return;
  armed.fired = true;
  throw std::bad_alloc();
}

ArmedFailure::ArmedFailure(const char *name, long nth) {
  Armed &armed = state();
  std::lock_guard<std::mutex> lock(armed.mutex);
  armed.name = name;
  armed.nth = nth;
  armed.passes = 0;
  armed.fired = false;
  failure_detail::armed.store(true, std::memory_order_relaxed);
}

ArmedFailure::~ArmedFailure() {
  Armed &armed = state();
  std::lock_guard<std::mutex> lock(armed.mutex);
  armed.name = nullptr;
  failure_detail::armed.store(false, std::memory_order_relaxed);
}

long ArmedFailure::passes() const {
  Armed &armed = state();
  std::lock_guard<std::mutex> lock(armed.mutex);
  return armed.passes;
}

bool ArmedFailure::fired() const {
  Armed &armed = state();
  std::lock_guard<std::mutex> lock(armed.mutex);
  return armed.fired;
}

}  // namespace kiln::support
