// Elapsed time since a steady-clock point, for the step timings kiln reports.
#pragma once

#include <chrono>

namespace kiln::support {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace kiln::support
