/* kiln tests: kiln/ext/robotmodel.h compiled as C (C99, strict). The sizes and offsets a C host sees,
 * for test_ik_robotmodel.cpp to compare with C++'s. */
#include <stddef.h>

#include "kiln/ext/robotmodel.h"

size_t kiln_robotmodel_test_c_layout(size_t *out, size_t capacity);

size_t kiln_robotmodel_test_c_layout(size_t *out, size_t capacity) {
  const size_t values[] = {sizeof(kiln_robotmodel_chain_info), offsetof(kiln_robotmodel_chain_info, gravity),
                           offsetof(kiln_robotmodel_chain_info, robot),
                           sizeof(kiln_robotmodel_joint),      offsetof(kiln_robotmodel_joint, origin_position),
                           offsetof(kiln_robotmodel_joint, lower),
                           offsetof(kiln_robotmodel_joint, name),
                           sizeof(kiln_robotmodel_v1),         offsetof(kiln_robotmodel_v1, rnea)};
  const size_t count = sizeof values / sizeof values[0];
  size_t i;
  for (i = 0; i < count && i < capacity; ++i) out[i] = values[i];
  return count;
}
