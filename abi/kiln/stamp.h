/* kiln plugin ABI: the build stamp compiled into every plugin.
 *
 * The stamp ties a plugin file to its store entry. It holds a 32-character slot for the
 * entry's content key, all '0' as compiled. When kiln publishes or builds the plugin it
 * computes the content key (of the file with this slot zeroed) and writes it into the slot
 * of the stored copy, as Go writes its build ID. At load the host reads the stamp through
 * the entry table and refuses the plugin unless the key equals the one its manifest names:
 * a file copied into the wrong entry, or an entry's file replaced, is never bound.
 *
 * The record begins with a 16-byte magic so that kiln can find it in the file's bytes
 * without running any of the plugin's code. A plugin holds exactly one stamp.
 */
#ifndef KILN_ABI_STAMP_H
#define KILN_ABI_STAMP_H

#include <stdint.h>

#define KILN_STAMP_MAGIC "KILN-BUILD-STAMP" /* 16 characters, stored without its NUL */
#define KILN_STAMP_MAGIC_SIZE 16
#define KILN_STAMP_KEY_SIZE 32              /* XXH3-128 as lower-case hex */
#define KILN_STAMP_ARCHS_SIZE 96

typedef struct kiln_build_stamp {
  char magic[KILN_STAMP_MAGIC_SIZE];
  uint32_t struct_size;   /* sizeof(kiln_build_stamp) of the plugin */
  uint32_t abi_version;   /* the newest ABI version the plugin offers: KILN_PLUGIN_ABI_MAX of the
                           * helper, which is KILN_ABI_VERSION of its headers unless narrowed */
  /* The store entry's content key, written by kiln into the stored copy; NUL-terminated. */
  char content_key[KILN_STAMP_KEY_SIZE + 1];
  /* Device architectures the plugin was compiled for, as nvcc's __CUDA_ARCH_LIST__
   * ("900,870"), or "" for host-only plugins. Informative: the manifest's archs decide. */
  char archs[KILN_STAMP_ARCHS_SIZE];
} kiln_build_stamp;

#endif
