// The cross-process trigger's watcher thread: not wired yet (the generation table lands next).
#include "swap/core.hpp"

namespace kiln {

void SwapCore::Impl::start_watcher() {
  throw UsageError("hot swap of " + options.consumer + "/" + options.name +
                   ": SwapOptions::watch is not available yet in this kiln; swap from a setup thread");
}

void SwapCore::Impl::stop_watcher() noexcept {}

}  // namespace kiln
