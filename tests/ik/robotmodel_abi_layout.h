/* kiln tests: the sizes and offsets of kiln.robotmodel/1 (kiln/ext/robotmodel.h) the layout test
 * checks, one list for robotmodel_abi_c.c (compiled as C) and test_ik_robotmodel.cpp (C++) to expand:
 * whatever is added is seen by both languages. */
#ifndef KILN_TESTS_ROBOTMODEL_ABI_LAYOUT_H
#define KILN_TESTS_ROBOTMODEL_ABI_LAYOUT_H

#include <stddef.h>

#include "kiln/ext/robotmodel.h"

#define KILN_ROBOTMODEL_ABI_LAYOUT                                                              \
  sizeof(kiln_robotmodel_chain_info), offsetof(kiln_robotmodel_chain_info, gravity),            \
      offsetof(kiln_robotmodel_chain_info, robot), sizeof(kiln_robotmodel_joint),               \
      offsetof(kiln_robotmodel_joint, origin_position), offsetof(kiln_robotmodel_joint, lower), \
      offsetof(kiln_robotmodel_joint, name), sizeof(kiln_robotmodel_v1),                        \
      offsetof(kiln_robotmodel_v1, rnea), offsetof(kiln_robotmodel_chain_info, model_fingerprint)

#endif
