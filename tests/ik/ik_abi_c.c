/* kiln IK tests: kiln/ext/ik.h compiled as C. The sizes and offsets a C host sees, for
 * test_ik_abi.cpp to compare with C++'s. */
#include <stddef.h>

#include "kiln/ext/ik.h"

size_t kiln_ik_test_c_layout(size_t *out, size_t capacity);

size_t kiln_ik_test_c_layout(size_t *out, size_t capacity) {
  const size_t values[] = {
      sizeof(kiln_ik_options),   offsetof(kiln_ik_options, random_seed),
      sizeof(kiln_ik_problem),   offsetof(kiln_ik_problem, targets),
      offsetof(kiln_ik_problem, stream),
      sizeof(kiln_ik_result),    offsetof(kiln_ik_result, q),
      offsetof(kiln_ik_result, iterations),
      sizeof(kiln_ik_info),      offsetof(kiln_ik_info, device_bytes),
      offsetof(kiln_ik_info, source),
      sizeof(kiln_ik_joint_info), offsetof(kiln_ik_joint_info, lower),
      offsetof(kiln_ik_joint_info, name),
      sizeof(kiln_ik_v1),        offsetof(kiln_ik_v1, solve),
      offsetof(kiln_ik_options, flags), offsetof(kiln_ik_info, solve_flags)};
  const size_t count = sizeof values / sizeof values[0];
  size_t i;
  for (i = 0; i < count && i < capacity; ++i) out[i] = values[i];
  return count;
}
