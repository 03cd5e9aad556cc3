/* kiln TrajOpt tests: the sizes and offsets of kiln.trajopt/1 (kiln/ext/trajopt.h) the layout test
 * checks, one list for trajopt_abi_c.c (compiled as C) and test_trajopt_abi.cpp (C++) to expand:
 * whatever is added is seen by both languages. */
#ifndef KILN_TESTS_TRAJOPT_ABI_LAYOUT_H
#define KILN_TESTS_TRAJOPT_ABI_LAYOUT_H

#include <stddef.h>

#include "kiln/ext/trajopt.h"

#define KILN_TRAJOPT_ABI_LAYOUT                                                                               \
  sizeof(kiln_trajopt_options), offsetof(kiln_trajopt_options, random_seed),                                \
      offsetof(kiln_trajopt_options, flags), sizeof(kiln_trajopt_problem), offsetof(kiln_trajopt_problem, q0), \
      offsetof(kiln_trajopt_problem, stream), sizeof(kiln_trajopt_result), offsetof(kiln_trajopt_result, q),  \
      offsetof(kiln_trajopt_result, iterations), sizeof(kiln_trajopt_info),                                  \
      offsetof(kiln_trajopt_info, device_bytes), offsetof(kiln_trajopt_info, source),                        \
      sizeof(kiln_trajopt_joint_info), offsetof(kiln_trajopt_joint_info, name), sizeof(kiln_trajopt_v1),     \
      offsetof(kiln_trajopt_v1, solve), offsetof(kiln_trajopt_problem, track_poses),                         \
      offsetof(kiln_trajopt_problem, track_weights), offsetof(kiln_trajopt_result, within_limits),           \
      offsetof(kiln_trajopt_info, features)

#endif
