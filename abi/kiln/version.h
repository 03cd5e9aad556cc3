/* kiln plugin ABI: version numbers.
 *
 * An ABI version is (major << 16) | minor. Hosts and plugins agree on one version at
 * negotiation (see plugin.h). A major change may break anything; a minor change only
 * appends fields to the end of structs and tables, so a plugin built for 1.N works with
 * every host that speaks 1.M, M >= N, and the reverse holds for the fields both know
 * (every struct carries struct_size; nobody reads past it).
 */
#ifndef KILN_ABI_VERSION_H
#define KILN_ABI_VERSION_H

#include <stdint.h>

/* C++ gets static_cast so that code built with -Wold-style-cast stays warning-free. */
#ifdef __cplusplus
#define KILN_ABI_CAST_U32_(x) static_cast<uint32_t>(x)
#else
#define KILN_ABI_CAST_U32_(x) ((uint32_t)(x))
#endif
#define KILN_ABI_MAKE_VERSION(major, minor) \
  KILN_ABI_CAST_U32_((KILN_ABI_CAST_U32_(major) << 16) | (KILN_ABI_CAST_U32_(minor) & 0xffffu))
#define KILN_ABI_VERSION_MAJOR_OF(v) (KILN_ABI_CAST_U32_(v) >> 16)
#define KILN_ABI_VERSION_MINOR_OF(v) (KILN_ABI_CAST_U32_(v) & 0xffffu)

/* The version this header set describes. */
#define KILN_ABI_VERSION_MAJOR 1
#define KILN_ABI_VERSION_MINOR 1
#define KILN_ABI_VERSION KILN_ABI_MAKE_VERSION(KILN_ABI_VERSION_MAJOR, KILN_ABI_VERSION_MINOR)

#endif
