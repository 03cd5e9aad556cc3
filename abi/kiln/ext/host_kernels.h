/* kiln host service "kiln.host.kernels/1": device kernels the host loads for a plugin.
 *
 * A plugin whose GPU code is a kiln *device-image artifact* (cubins per arch + PTX, built by
 * kiln's JIT backend or shipped prepared) does not load it itself. It asks the host:
 *
 *   const kiln_host_kernels_v1 *kernels =
 *       (const kiln_host_kernels_v1 *)host->get_service(host, KILN_HOST_KERNELS_SERVICE_ID);
 *   if (kernels == NULL || kernels->struct_size < KILN_HOST_KERNELS_V1_MIN_SIZE) -> not offered
 *   void *function = NULL;
 *   char message[512];
 *   kiln_status s = kernels->get_kernel(host, "hjcd-ik", "fk", "fk_kernel", device_ordinal,
 *                                       &function, message, sizeof message);
 *   ... cuLaunchKernel((CUfunction)function, ...) from a thread whose current context is the
 *       device's primary context (cudaSetDevice(device_ordinal) with the runtime API),
 *   ... or kernels->launch(host, device_ordinal, function, grid, block, 0, stream, params, ...),
 *       which makes that context current itself.
 *
 * A plugin that is host code only (built without nvcc, not linked to libcuda or cudart) gets
 * every other driver entry point it needs (cuMemAlloc, cuMemcpyHtoD, cuStreamSynchronize, ...)
 * from get_driver_proc: the host's driver, opened by the host, so the plugin never dlopens or
 * links the driver itself.
 *
 * The host then does the whole docs/architecture.md §2 load path for that artifact: resolve it in the stores
 * (building it on a miss where the host allows builds), check its recorded identity, pick the
 * image the device runs (SASS for its arch, else PTX the driver can JIT), load it, and resolve
 * EVERY kernel the artifact lists -- so an image the device cannot run is refused here, with a
 * message naming the kernel, the image and the CUDA error, never at the plugin's first launch.
 *
 * Ownership and lifetime: the host owns every loaded library and every function it hands out.
 * A function stays valid, unchanged, until the plugin's last instance is destroyed (the same
 * lifetime as kiln_host_services): kiln keeps each artifact loaded, per (consumer, name,
 * device), in the state of the loaded plugin, which is released only after the plugin's last
 * instance -- even when the kiln::Runtime that loaded the plugin is destroyed earlier. The
 * plugin never unloads or frees it. Asking twice for the same (consumer, name, kernel,
 * device) returns the same function without loading again; a failed load is not remembered
 * (the next call tries again).
 *
 * Contexts: functions belong to the device's *primary* context (cuDevicePrimaryCtxRetain), the
 * one the CUDA runtime API uses, so runtime-API memory, streams and events work with them.
 *
 * Tables are append-only (abi/README.md §3): a later revision-1 table may be larger; read no
 * field past struct_size.
 */
#ifndef KILN_ABI_EXT_HOST_KERNELS_H
#define KILN_ABI_EXT_HOST_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "../host.h"
#include "../status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_HOST_KERNELS_SERVICE_ID "kiln.host.kernels/1"

typedef struct kiln_host_kernels_v1 {
  uint32_t struct_size; /* sizeof(kiln_host_kernels_v1) of the host */

  /* Load (once) device-image artifact `name` of `consumer` for device `device_ordinal` and
   * return kernel `kernel_name` of it as a CUfunction of that device's primary context.
   *
   * host:           the kiln_host_services the plugin was given (not NULL).
   * consumer, name: the artifact, as the store names it (short identifiers; not NULL).
   * kernel_name:    the kernel as the driver knows it: the extern "C" name, or the lowered
   *                 (mangled) name the artifact's kernel list records; or the name
   *                 expression its recipe lists ("scale<float>") (not NULL).
   * device_ordinal: CUDA device ordinal as the driver numbers it (respects
   *                 CUDA_VISIBLE_DEVICES), >= 0.
   * cu_function_out: receives the CUfunction (cast to void *) on KILN_OK; set to NULL on any
   *                 failure (not NULL).
   * message, message_size: caller-owned buffer (status.h convention). On failure: why, naming
   *                 the artifact, the kernel, the device, the image and the CUDA error, e.g.
   *                 "kernel \"fk\" of hjcd-ik/fk: image sm_87 cubin does not run on device 0
   *                 (NVIDIA H200, sm_90): cuda_arch: recorded sm_87, current sm_90 (...)".
   *                 On KILN_OK: which image was chosen and why, e.g. "sm_90 cubin: exact SASS
   *                 sm_90". May be NULL when message_size is 0.
   *
   * Returns:
   *   KILN_OK                    the function is in *cu_function_out;
   *   KILN_ERR_INVALID_ARGUMENT  a NULL argument, a negative or unknown device ordinal, a bad
   *                              name;
   *   KILN_ERR_UNSUPPORTED       no such artifact, or no such kernel in it (and the host may not
   *                              build it);
   *   KILN_ERR_DEVICE            no driver or device, no image of the artifact runs on the
   *                              device, the image is damaged, or a CUDA call failed;
   *   KILN_ERR_OUT_OF_MEMORY     host or device memory ran out while loading;
   *   KILN_ERR_INTERNAL          a bug in the host; the message says where.
   *
   * [setup-thread] May build, read files, take locks and talk to the CUDA driver; it may make
   * the device's primary context current on the calling thread. Never call it from a
   * [control-thread: real-time safe] function: fetch every function in activate. Thread-safe
   * across instances and plugins (the host serialises loads itself). */
  kiln_status (*get_kernel)(const kiln_host_services *host, const char *consumer, const char *name,
                            const char *kernel_name, int32_t device_ordinal, void **cu_function_out,
                            char *message, size_t message_size);

  /* cuLaunchKernel of a function get_kernel returned for device_ordinal, with that device's
   * primary context made current on the calling thread first when it is not (cuCtxGetCurrent /
   * cuCtxSetCurrent). grid and block: 3 elements each (x, y, z; each >= 1). cu_stream: a
   * CUstream of that context, or NULL for its legacy default stream. kernel_params: as
   * cuLaunchKernel's kernelParams. Asynchronous like cuLaunchKernel: synchronise the stream
   * (get_driver_proc("cuStreamSynchronize", ...)) before reading results.
   *
   * Returns KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL function, grid or block, a zero
   * dimension, a bad ordinal); KILN_ERR_STATE (get_kernel never succeeded for that device);
   * KILN_ERR_DEVICE (the driver refused; message names the CUDA error).
   *
   * [any-thread] No allocation, lock or I/O by the host on success; the driver call itself is
   * not guaranteed real-time safe. */
  kiln_status (*launch)(const kiln_host_services *host, int32_t device_ordinal, void *cu_function,
                        const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes,
                        void *cu_stream, void **kernel_params, char *message, size_t message_size);

  /* A CUDA Driver API entry point by its base name ("cuMemAlloc", "cuMemcpyHtoD",
   * "cuStreamSynchronize"), as cuGetProcAddress returns it for cuda_version (pass the
   * CUDA_VERSION of the headers you take its type from; the host lowers it to the driver's
   * version when the driver is older, as it does for its own calls). Take the type from
   * cudaTypedefs.h, PFN_<name>_v<N> for the newest N <= cuda_version: cuda.h's declaration of
   * the base name can be an older variant (for 13000, "cuCtxSynchronize" is
   * cuCtxSynchronize_v2(CUcontext), PFN_cuCtxSynchronize_v13000, not cuda.h's (void) one).
   * The pointer stays valid for the life of the process.
   *
   * Returns KILN_OK with *proc_out set; KILN_ERR_INVALID_ARGUMENT (NULL arguments);
   * KILN_ERR_DEVICE (no driver on this machine, or it does not offer the symbol: the message
   * says which). *proc_out is NULL on failure.
   *
   * [setup-thread] (takes a lock; may initialise the driver): fetch entry points in activate. */
  kiln_status (*get_driver_proc)(const kiln_host_services *host, const char *symbol, int32_t cuda_version,
                                 void **proc_out, char *message, size_t message_size);
} kiln_host_kernels_v1;

/* The size of revision 1 as first published (get_kernel, launch, get_driver_proc): a table
 * smaller than this is not usable. */
#define KILN_HOST_KERNELS_V1_MIN_SIZE \
  (offsetof(kiln_host_kernels_v1, get_driver_proc) + sizeof(void *))

#ifdef __cplusplus
}
#endif

#endif
