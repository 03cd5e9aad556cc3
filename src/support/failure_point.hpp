// Named allocation-failure points for tests: a test arms a point in its own process
// (ArmedFailure) and the nth pass through it throws std::bad_alloc, exactly where the code
// allocates, so the paths that must survive running out of memory are exercised. Unlike the
// crash points (fault_point.hpp) nothing is read from the environment: only a test arms them.
//
// Unarmed (always, outside those tests) a point is one relaxed load of a flag and a branch
// predicted not taken.
#pragma once

#include <atomic>

namespace kiln::support {

// Every failure point, in one place: KILN_FAILURE_POINT refuses at compile time a name not listed.
inline constexpr const char *kFailurePoints[] = {
    "swap.publish",       // swap: the room publish needs (the resident list, the report's lines)
    "swap.retire",        // retire: the retired version's report line and its /proc/self/maps check
    "store.vouches",      // VerificationRecords::vouches: the record's path
};

constexpr bool same_failure_name(const char *a, const char *b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

constexpr bool is_failure_point(const char *name) {
  for (const char *point : kFailurePoints) {
    if (same_failure_name(point, name)) return true;
  }
  return false;
}

namespace failure_detail {
inline std::atomic<bool> armed{false};
// Throws std::bad_alloc when `name` is the armed point and this is its nth pass.
void reached(const char *name);
}  // namespace failure_detail

// Arms `name` to fail on its nth pass from now (once), in every thread of this process; the
// destructor disarms it. One point at a time.
class ArmedFailure {
 public:
  explicit ArmedFailure(const char *name, long nth = 1);
  ~ArmedFailure();
  ArmedFailure(const ArmedFailure &) = delete;
  ArmedFailure &operator=(const ArmedFailure &) = delete;
  long passes() const;  // how often the point was passed since it was armed
  bool fired() const;
};

}  // namespace kiln::support

#define KILN_FAILURE_POINT(name)                                                                 \
  do {                                                                                           \
    static_assert(::kiln::support::is_failure_point(name), "list " name " in kFailurePoints");  \
    if (__builtin_expect(::kiln::support::failure_detail::armed.load(std::memory_order_relaxed), 0)) { \
      ::kiln::support::failure_detail::reached(name);                                            \
    }                                                                                            \
  } while (0)
