/* kiln plugin ABI: negotiation, the entry table and the instance lifecycle.
 *
 * A plugin is a shared object that exports exactly one symbol, kiln_plugin_negotiate.
 * Everything else is reached through the tables it hands back.
 *
 *   host                                         plugin
 *   kiln_plugin_negotiate(request, answer) --->  picks a version in [abi_min, abi_max]
 *                                         <---   answer: abi_version, entry table
 *   host re-checks the answer (version range, struct sizes, stamp == manifest content key)
 *   entry->create -> entry->activate -> get_interface(...) calls -> deactivate -> destroy
 *
 * Thread classes used below:
 *   [any-thread]                         any thread, concurrently with any other call.
 *   [setup-thread]                       one non-real-time thread at a time per instance; may
 *                                        allocate, lock, do I/O and talk to the CUDA driver.
 *   [control-thread: real-time safe]     the controller's loop thread; never allocates, locks,
 *                                        blocks or does I/O. Only after activate succeeded.
 *
 * Ownership: whoever allocates frees. Strings and tables a plugin returns are owned by the
 * plugin and live until the shared object is unloaded unless said otherwise.
 */
#ifndef KILN_ABI_PLUGIN_H
#define KILN_ABI_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "stamp.h"
#include "status.h"
#include "version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KILN_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KILN_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The one exported symbol's name, for dlsym. */
#define KILN_PLUGIN_NEGOTIATE_SYMBOL "kiln_plugin_negotiate"

/* An instance of the plugin; opaque to the host. */
typedef struct kiln_instance kiln_instance;

typedef struct kiln_create_params {
  uint32_t struct_size;
  const kiln_host_services *host; /* same table as at negotiation */
} kiln_create_params;

/* kiln_activate_params.flags (ABI 1.1; 0 from a 1.0 host).
 *
 * KILN_ACTIVATE_IN_CURRENT_CONTEXT: the host has made current, on the thread calling activate,
 * the CUDA context the instance must run in: a green context holding a share of the device's
 * SMs. Create every stream, event, allocation and module in it, and do not change the thread's
 * context first (no cudaSetDevice, cuCtxSetCurrent, cuCtxPushCurrent, cuDevicePrimaryCtxRetain
 * made current): work enqueued on a stream created there runs on the share's SMs from any
 * thread, so later calls need no context of their own. The host refuses an instance whose
 * activate returned with another context current. A plugin that cannot run in a context it did
 * not choose returns KILN_ERR_UNSUPPORTED. Only with device_ordinal >= 0. */
#define KILN_ACTIVATE_IN_CURRENT_CONTEXT (1u << 0)

typedef struct kiln_activate_params {
  uint32_t struct_size;
  int32_t device_ordinal; /* CUDA device ordinal to run on; -1: host only (no device work) */
  uint32_t max_batch;     /* the largest batch any later call will pass; reserve for it now */
  uint64_t flags;         /* KILN_ACTIVATE_* bits; bits the plugin does not know: refuse (KILN_ERR_UNSUPPORTED) */
  /* ABI 1.1 */
  int32_t stream_priority; /* create every stream with this priority (cudaStreamCreateWithPriority):
                            * CUDA's scale, 0 the default, lower numbers run first; the host has
                            * checked it against the device's range. 0 when absent. */
  uint32_t sm_count;       /* the SMs the instance's work may use (its green context's share): a
                            * plugin that sizes grids by the device's SM count uses this instead.
                            * 0: the whole device. */
} kiln_activate_params;

typedef struct kiln_plugin_entry {
  uint32_t struct_size; /* sizeof(kiln_plugin_entry) of the plugin; the host never reads past it */

  /* The build stamp (stamp.h). Never NULL. */
  const kiln_build_stamp *stamp;

  /* Plugin identifier (reverse-DNS style, e.g. "org.kiln.example") and its own version. */
  const char *plugin_id;
  const char *plugin_version;

  /* NULL-terminated list of interface ids with revision the plugin offers ("kiln.ik/1"),
   * so a host can list them without creating an instance. */
  const char *const *interface_ids;

  /* Create an instance. Allocates host memory only; no device work.
   * [setup-thread] On failure *instance is NULL and message says why. */
  kiln_status (*create)(const kiln_create_params *params, kiln_instance **instance,
                        char *message, size_t message_size);

  /* Allocate everything later calls need (device memory for params->max_batch, streams,
   * loaded kernels) and warm it. After KILN_OK the instance's real-time calls may run.
   * [setup-thread] */
  kiln_status (*activate)(kiln_instance *instance, const kiln_activate_params *params,
                          char *message, size_t message_size);

  /* Release what activate took. Safe on an instance that is not active.
   * [setup-thread] No real-time call may be running on this instance. */
  void (*deactivate)(kiln_instance *instance);

  /* Free the instance (deactivating first if needed). NULL is ignored.
   * [setup-thread] */
  void (*destroy)(kiln_instance *instance);

  /* The function table of interface_id (e.g. "kiln.ik/1"), or NULL when not offered.
   * The table is owned by the plugin and valid until destroy; its functions take the
   * instance as first argument.
   * [any-thread] */
  const void *(*get_interface)(const kiln_instance *instance, const char *interface_id);

  /* Versioned state blob for hot swap. NULL when the plugin has no state to carry over.
   * export_state: with buffer NULL, writes the needed size into *size; else writes at most
   * capacity bytes and the written size. The blob starts with the plugin's own format id and
   * version; import_state refuses (KILN_ERR_UNSUPPORTED) a blob it does not understand.
   * [setup-thread] */
  kiln_status (*export_state)(const kiln_instance *instance, void *buffer, size_t capacity,
                              size_t *size, char *message, size_t message_size);
  kiln_status (*import_state)(kiln_instance *instance, const void *blob, size_t size,
                              char *message, size_t message_size);
} kiln_plugin_entry;

typedef struct kiln_negotiation_request {
  uint32_t struct_size;
  uint32_t abi_min; /* lowest ABI version the host accepts (its required major.minor) */
  uint32_t abi_max; /* highest ABI version the host speaks */
  const kiln_host_services *host;
} kiln_negotiation_request;

typedef struct kiln_negotiation_answer {
  uint32_t struct_size;                /* set by the host to its sizeof; plugin writes no further */
  uint32_t abi_version;                /* chosen by the plugin, within [abi_min, abi_max] */
  const kiln_plugin_entry *entry;      /* the plugin's entry table for that version */
} kiln_negotiation_answer;

/* The plugin's single exported symbol. Pick the highest version the plugin implements in
 * [request->abi_min, request->abi_max] and fill answer; KILN_ERR_UNSUPPORTED when there is
 * none (answer->entry stays NULL). Does no work beyond that: no allocation, no CUDA call.
 * [setup-thread] */
typedef kiln_status (*kiln_plugin_negotiate_fn)(const kiln_negotiation_request *request,
                                                kiln_negotiation_answer *answer);

#ifdef __cplusplus
}
#endif

#endif
