/* kiln interface "kiln.example/1": the small device-code interface of kiln's test plugin.
 *
 * It exists so that kiln's own tests exercise a real interface end to end: a host-side
 * function (no GPU needed) and a kernel launch (GPU needed).
 */
#ifndef KILN_ABI_EXT_EXAMPLE_H
#define KILN_ABI_EXT_EXAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "../plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_EXAMPLE_INTERFACE_ID "kiln.example/1"

typedef struct kiln_example_v1 {
  uint32_t struct_size;

  /* a * b + c computed on the host. Works without a device and without activate.
   * [any-thread] [control-thread: real-time safe] */
  double (*host_fma)(const kiln_instance *instance, double a, double b, double c);

  /* y[i] = a * x[i] + y[i] for i < n on the activated device, synchronously, in buffers
   * reserved at activate (n <= max_batch). x and y are host memory owned by the caller.
   * [setup-thread] (copies and synchronises: not real-time safe) */
  kiln_status (*saxpy)(kiln_instance *instance, float a, const float *x, float *y, uint32_t n,
                       char *message, size_t message_size);

  /* The compute capability (major * 10 + minor) the kernel actually ran on, from the
   * device code's __CUDA_ARCH__ of the last saxpy; 0 before. [any-thread] */
  int32_t (*last_device_arch)(const kiln_instance *instance);
} kiln_example_v1;

#ifdef __cplusplus
}
#endif

#endif
