/* kiln test interface "kiln.test.host_kernels/1": a host-only plugin that runs device kernels it
 * never loads itself, through the host service "kiln.host.kernels/1" (abi/kiln/ext/host_kernels.h).
 * Implemented by tests/plugins/host_kernels_user.cpp; not part of kiln's ABI. */
#ifndef KILN_TEST_HOST_KERNELS_USER_H
#define KILN_TEST_HOST_KERNELS_USER_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_TEST_HOST_KERNELS_INTERFACE_ID "kiln.test.host_kernels/1"

typedef struct kiln_test_host_kernels_v1 {
  uint32_t struct_size;

  /* Asks the host for `kernel` of device-image artifact consumer/name on `device` (get_kernel),
   * then for the driver calls saxpy needs (get_driver_proc). Returns the host's status and
   * message, or KILN_ERR_UNSUPPORTED when the host offers no kiln.host.kernels/1. [setup-thread] */
  kiln_status (*prepare)(kiln_instance *instance, const char *consumer, const char *name, const char *kernel,
                         int32_t device, char *message, size_t message_size);

  /* y[i] = a * x[i] + y[i], i < n, with the prepared kernel (signature (float, const float *,
   * float *, int)): device buffers from cuMemAlloc, the launch through the host's launch,
   * cuCtxSynchronize, copies back. x and y are host memory. [setup-thread] */
  kiln_status (*saxpy)(kiln_instance *instance, float a, const float *x, float *y, int32_t n, char *message,
                       size_t message_size);

  /* The CUfunction the last successful prepare received (NULL before). [any-thread] */
  const void *(*function)(const kiln_instance *instance);

  /* get_driver_proc(symbol) through the host, nothing else: its status and message. [setup-thread] */
  kiln_status (*probe_driver)(kiln_instance *instance, const char *symbol, char *message, size_t message_size);
} kiln_test_host_kernels_v1;

#ifdef __cplusplus
}
#endif

#endif
