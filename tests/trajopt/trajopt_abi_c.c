/* kiln TrajOpt tests: kiln/ext/trajopt.h compiled as C. The sizes and offsets a C host sees, for
 * test_trajopt_abi.cpp to compare with C++'s. */
#include <stddef.h>

#include "kiln/ext/trajopt.h"

size_t kiln_trajopt_test_c_layout(size_t *out, size_t capacity);

size_t kiln_trajopt_test_c_layout(size_t *out, size_t capacity) {
  const size_t values[] = {
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
  const size_t count = sizeof values / sizeof values[0];
  size_t i;
  for (i = 0; i < count && i < capacity; ++i) out[i] = values[i];
  return count;
}
