// kiln TrajOpt tests: the layout of kiln.trajopt/1 (abi/kiln/ext/trajopt.h) on x86-64 / aarch64
// LP64, the same from C and C++. A change here breaks every plugin and host built before it:
// append only.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "trajopt_abi_layout.h"

extern "C" size_t kiln_trajopt_test_c_layout(size_t *out, size_t capacity);

TEST_CASE("kiln.trajopt/1: struct layouts are fixed, the same from C and C++, and revision 1.1 only appends") {
  const std::vector<size_t> cxx = {KILN_TRAJOPT_ABI_LAYOUT};
  // Revision 1.1 appended track_poses and track_weights at the end of the problem (revision 1.0's
  // 88 bytes), within_limits at the end of the result (1.0's 96) and features at the end of the
  // info (1.0's 304); every earlier offset stays.
  const std::vector<size_t> expected = {56, 40, 48, 104, 16, 80, 104, 8, 88, 312, 32, 240, 112, 48, 56, 48,
                                        88, 96, 96, 304};
  std::vector<size_t> c(cxx.size());
  REQUIRE(kiln_trajopt_test_c_layout(c.data(), c.size()) == cxx.size());
  CHECK(c == cxx);
  CHECK(cxx == expected);
  CHECK(std::string(KILN_TRAJOPT_INTERFACE_ID) == "kiln.trajopt/1");
}
