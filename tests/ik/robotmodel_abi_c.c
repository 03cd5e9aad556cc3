/* kiln tests: kiln/ext/robotmodel.h compiled as C (C99, strict). The sizes and offsets a C host sees,
 * for test_ik_robotmodel.cpp to compare with C++'s. */
#include <stddef.h>

#include "robotmodel_abi_layout.h"

size_t kiln_robotmodel_test_c_layout(size_t *out, size_t capacity);

size_t kiln_robotmodel_test_c_layout(size_t *out, size_t capacity) {
  const size_t values[] = {KILN_ROBOTMODEL_ABI_LAYOUT};
  const size_t count = sizeof values / sizeof values[0];
  size_t i;
  for (i = 0; i < count && i < capacity; ++i) out[i] = values[i];
  return count;
}
