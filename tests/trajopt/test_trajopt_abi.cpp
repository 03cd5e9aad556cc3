// kiln TrajOpt tests: the layout of kiln.trajopt/1 (abi/kiln/ext/trajopt.h) on x86-64 / aarch64
// LP64, the same from C and C++. A change here breaks every plugin and host built before it:
// append only.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include <kiln/ext/trajopt.h>

extern "C" size_t kiln_trajopt_test_c_layout(size_t *out, size_t capacity);

TEST_CASE("kiln.trajopt/1: struct layouts are fixed, the same from C and C++, and revision 1.1 only appends") {
  const std::vector<size_t> cxx = {
      sizeof(kiln_trajopt_options),    offsetof(kiln_trajopt_options, random_seed),
      offsetof(kiln_trajopt_options, flags),
      sizeof(kiln_trajopt_problem),    offsetof(kiln_trajopt_problem, q0),
      offsetof(kiln_trajopt_problem, stream),
      sizeof(kiln_trajopt_result),     offsetof(kiln_trajopt_result, q),
      offsetof(kiln_trajopt_result, iterations),
      sizeof(kiln_trajopt_info),       offsetof(kiln_trajopt_info, device_bytes),
      offsetof(kiln_trajopt_info, source),
      sizeof(kiln_trajopt_joint_info), offsetof(kiln_trajopt_joint_info, name),
      sizeof(kiln_trajopt_v1),         offsetof(kiln_trajopt_v1, solve),
      offsetof(kiln_trajopt_problem, track_poses), offsetof(kiln_trajopt_problem, track_weights),
      offsetof(kiln_trajopt_result, within_limits), offsetof(kiln_trajopt_info, features)};
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
