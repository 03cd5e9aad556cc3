/* kiln plugin ABI: the services a host offers a plugin.
 *
 * The host passes one kiln_host_services at negotiation and again at create. It stays valid
 * and unchanged until the plugin's last instance is destroyed. The plugin never frees it.
 */
#ifndef KILN_ABI_HOST_H
#define KILN_ABI_HOST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  KILN_LOG_DEBUG = 0,
  KILN_LOG_INFO = 1,
  KILN_LOG_WARNING = 2,
  KILN_LOG_ERROR = 3
};

typedef struct kiln_host_services {
  uint32_t struct_size; /* sizeof(kiln_host_services) of the host; read no field past it */

  /* Opaque to the plugin; the host's own context for the callbacks below. */
  void *host_data;

  /* Name and version of the host program, e.g. "kiln" "0.1.0". Owned by the host. */
  const char *host_name;
  const char *host_version;

  /* Forward a message to the host's log. message is copied before the call returns.
   * [any-thread] Not real-time safe (the host may lock or allocate): never call it from
   * a [control-thread: real-time safe] function. */
  void (*log)(const struct kiln_host_services *host, int32_t level, const char *message);

  /* A further host service by string id with revision (e.g. "kiln.host.kernels/1"), or NULL
   * when the host does not offer it. The returned table is owned by the host and stays valid
   * as long as this struct does.
   * [any-thread] */
  const void *(*get_service)(const struct kiln_host_services *host, const char *service_id);
} kiln_host_services;

#ifdef __cplusplus
}
#endif

#endif
