/* kiln test plugin interface "kiln.test.placement/1" (tests/plugins/placement_probe.cu): what an
 * instance's stream really runs on, for the GPU placement tests. */
#ifndef KILN_TEST_PLACEMENT_PROBE_H
#define KILN_TEST_PLACEMENT_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include <kiln/plugin.h>

#define KILN_TEST_PLACEMENT_INTERFACE_ID "kiln.test.placement/1"

typedef struct kiln_test_placement_v1 {
  uint32_t struct_size;
  /* [control-thread, no context needed] Runs `blocks` blocks on the stream activate created, each
   * noting its SM (%smid); writes how many distinct SMs ran them, that stream's priority and the
   * sm_count activate was given. */
  kiln_status (*run)(kiln_instance *instance, uint32_t blocks, uint32_t *distinct_sms, int32_t *stream_priority,
                     uint32_t *sm_count, char *message, size_t message_size);
} kiln_test_placement_v1;

#endif
