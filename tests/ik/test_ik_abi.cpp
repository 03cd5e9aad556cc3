// kiln IK tests: the layout of kiln.ik/1 (abi/kiln/ext/ik.h) on x86-64 / aarch64 LP64, the same
// from C and C++. A change here breaks every plugin and host built before it: append only.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "ik_abi_layout.h"

extern "C" size_t kiln_ik_test_c_layout(size_t *out, size_t capacity);

TEST_CASE("kiln.ik/1: struct layouts are fixed and the same from C and C++") {
  const std::vector<size_t> cxx = {KILN_IK_ABI_LAYOUT};
  // Appended later (append-only): options.flags (options grew from 32 to 40 bytes) and
  // info.solve_flags (info grew from 296 to 304); every earlier offset stays.
  const std::vector<size_t> expected = {40, 24, 48, 16, 40, 48, 8, 40, 304, 24, 232, 120, 8, 52, 72, 64, 32, 296};
  std::vector<size_t> c(cxx.size());
  REQUIRE(kiln_ik_test_c_layout(c.data(), c.size()) == cxx.size());
  CHECK(c == cxx);
  CHECK(cxx == expected);
  CHECK(std::string(KILN_IK_INTERFACE_ID) == "kiln.ik/1");
}
