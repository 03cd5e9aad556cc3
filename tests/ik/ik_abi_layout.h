/* kiln tests: the sizes and offsets of kiln.ik/1 (kiln/ext/ik.h) the layout test
 * checks, one list for ik_abi_c.c (compiled as C) and test_ik_abi.cpp (C++) to expand:
 * whatever is added is seen by both languages. */
#ifndef KILN_TESTS_IK_ABI_LAYOUT_H
#define KILN_TESTS_IK_ABI_LAYOUT_H

#include <stddef.h>

#include "kiln/ext/ik.h"

#define KILN_IK_ABI_LAYOUT                                                                        \
  sizeof(kiln_ik_options), offsetof(kiln_ik_options, random_seed), sizeof(kiln_ik_problem),       \
      offsetof(kiln_ik_problem, targets), offsetof(kiln_ik_problem, stream),                      \
      sizeof(kiln_ik_result), offsetof(kiln_ik_result, q), offsetof(kiln_ik_result, iterations),  \
      sizeof(kiln_ik_info), offsetof(kiln_ik_info, device_bytes), offsetof(kiln_ik_info, source), \
      sizeof(kiln_ik_joint_info), offsetof(kiln_ik_joint_info, lower),                            \
      offsetof(kiln_ik_joint_info, name), sizeof(kiln_ik_v1), offsetof(kiln_ik_v1, solve),        \
      offsetof(kiln_ik_options, flags), offsetof(kiln_ik_info, solve_flags)

#endif
