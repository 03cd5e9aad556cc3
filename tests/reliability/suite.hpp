// Shared by the reliability suite's test files: the scale of a run (CI or long), and reporting.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kiln::reliability {

// An integer from the environment (scripts/reliability sets these for the long variants).
inline long setting(const char *name, long fallback) {
  const char *value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char *end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  return (*end == '\0' && parsed >= 0) ? parsed : fallback;
}

// KILN_RELIABILITY_LONG=1: the long variants (scripts/reliability).
inline bool long_run() { return setting("KILN_RELIABILITY_LONG", 0) != 0; }

// Figures go to stdout as they come (ctest -V and scripts/reliability show them).
__attribute__((format(printf, 1, 2))) inline void say(const char *format, ...) {
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace kiln::reliability
