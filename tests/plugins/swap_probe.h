/* kiln test interface "kiln.test.swap/1": a host-only plugin for the hot-swap tests, built in
 * several versions and with faults on purpose (tests/plugins/CMakeLists.txt). Implemented by
 * tests/plugins/swap_probe.cpp; not part of kiln's ABI. */
#ifndef KILN_TEST_SWAP_PROBE_H
#define KILN_TEST_SWAP_PROBE_H

#include <stdint.h>

#include "kiln/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_TEST_SWAP_INTERFACE_ID "kiln.test.swap/1"

typedef struct kiln_test_swap_v1 {
  uint32_t struct_size;
  /* The version this file was built as (KILN_TEST_SWAP_VERSION). [any-thread] */
  uint64_t (*version)(const kiln_instance *instance);
  /* x * 1000 + version; counts the call in the instance's state. One caller at a time.
   * [control-thread: real-time safe] */
  uint64_t (*call)(kiln_instance *instance, uint64_t x);
  /* Calls counted: this instance's plus those carried in by import_state. [any-thread] */
  uint64_t (*calls)(const kiln_instance *instance);
  /* How many instances of this file are alive (0 after its last destroy). [any-thread] */
  uint64_t (*live_instances)(void);
} kiln_test_swap_v1;

#ifdef __cplusplus
}
#endif

#endif
