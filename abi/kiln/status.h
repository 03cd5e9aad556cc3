/* kiln plugin ABI: status codes and the message-buffer convention.
 *
 * No exception, C++ type or ownership crosses the ABI. A function that can fail returns a
 * kiln_status and, where it takes (char *message, size_t message_size), writes a
 * NUL-terminated, human-readable reason into that caller-owned buffer (truncating if it must).
 * message may be NULL when message_size is 0.
 */
#ifndef KILN_ABI_STATUS_H
#define KILN_ABI_STATUS_H

#include <stdint.h>

typedef int32_t kiln_status;

enum {
  KILN_OK = 0,
  KILN_ERR_INVALID_ARGUMENT = 1, /* a parameter is out of range or NULL where it may not be */
  KILN_ERR_UNSUPPORTED = 2,      /* the version, interface or operation is not offered */
  KILN_ERR_OUT_OF_MEMORY = 3,    /* host or device allocation failed */
  KILN_ERR_DEVICE = 4,           /* a CUDA call failed or no usable device */
  KILN_ERR_STATE = 5,            /* called in the wrong lifecycle state (e.g. solve before activate) */
  KILN_ERR_CAPACITY = 6,         /* a request exceeds what was reserved at activate (e.g. batch size) */
  KILN_ERR_INTERNAL = 7          /* a bug in the plugin; the message says where */
};

#endif
