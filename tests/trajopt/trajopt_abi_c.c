/* kiln TrajOpt tests: kiln/ext/trajopt.h compiled as C. The sizes and offsets a C host sees, for
 * test_trajopt_abi.cpp to compare with C++'s. */
#include <stddef.h>

#include "trajopt_abi_layout.h"

size_t kiln_trajopt_test_c_layout(size_t *out, size_t capacity);

size_t kiln_trajopt_test_c_layout(size_t *out, size_t capacity) {
  const size_t values[] = {KILN_TRAJOPT_ABI_LAYOUT};
  const size_t count = sizeof values / sizeof values[0];
  size_t i;
  for (i = 0; i < count && i < capacity; ++i) out[i] = values[i];
  return count;
}
