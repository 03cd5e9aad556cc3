/* kiln interface "kiln.selftest/1": a plugin checks itself before it is trusted with a controller.
 *
 * Optional. A host about to serve a freshly loaded version (hot swap, kiln/swap.hpp) activates it
 * with the device and max_batch the serving version uses, then runs its self-test; a version
 * whose self-test does not return KILN_OK is never served, and the one serving stays. A plugin
 * without this interface is served without a self-test (the swap report says so).
 *
 * What a self-test does is the plugin's choice, within the budget below: solve a few problems with
 * known answers on the activated device (or on the host after activate(-1)) and compare, check
 * that its kernels are the ones it expects, check its tables. It must exercise the same code
 * paths the control thread will run, so that a build that computes wrong answers is refused.
 *
 * Threads (see ../plugin.h): run is [setup-thread]: it may allocate, block, synchronise the device
 * and log. No real-time call runs on the instance meanwhile.
 *
 * Append-only: later revisions add functions at the end (struct_size tells the host which exist).
 * An incompatible change is a new id ("kiln.selftest/2").
 */
#ifndef KILN_ABI_EXT_SELFTEST_H
#define KILN_ABI_EXT_SELFTEST_H

#include <stddef.h>
#include <stdint.h>

#include "../plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_SELFTEST_INTERFACE_ID "kiln.selftest/1"

typedef struct kiln_selftest_v1 {
  uint32_t struct_size;

  /* Run the self-test on an activated instance. KILN_OK: every check passed. Anything else: the
   * version must not be served; message (NUL-terminated, truncated to message_size) says which
   * check failed with the values seen and expected. Should finish within about 100 ms: it runs
   * while a swap waits, never on the control thread.
   * [setup-thread] Only after activate succeeded. */
  kiln_status (*run)(kiln_instance *instance, char *message, size_t message_size);
} kiln_selftest_v1;

#ifdef __cplusplus
}
#endif

#endif
