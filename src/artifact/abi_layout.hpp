// The size of each table a plugin fills, as each ABI version defined it (abi/README.md
// "Versions"). A plugin that negotiated version V must fill at least V's size, whatever this
// kiln's own sizeof is (a 1.1 host still binds 1.0 plugins); the host never reads a field past
// the plugin's struct_size. Add a row whenever a minor version appends fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include <kiln/plugin.h>

namespace kiln::artifact {

struct AbiLayout {
  std::uint32_t version;     // the first ABI version with these sizes
  std::uint32_t entry_size;  // kiln_plugin_entry up to its last field of that version
  std::uint32_t stamp_size;  // kiln_build_stamp likewise
};

inline constexpr AbiLayout kAbiLayouts[] = {
    // 1.0: the entry ends with import_state, the stamp with archs.
    {KILN_ABI_MAKE_VERSION(1, 0),
     static_cast<std::uint32_t>(offsetof(kiln_plugin_entry, import_state) + sizeof(kiln_plugin_entry::import_state)),
     static_cast<std::uint32_t>(offsetof(kiln_build_stamp, archs) + KILN_STAMP_ARCHS_SIZE)},
    // 1.1: kiln_activate_params gains stream_priority and sm_count (the host's struct, read by the
    // plugin); the plugin's tables are 1.0's.
    {KILN_ABI_MAKE_VERSION(1, 1),
     static_cast<std::uint32_t>(offsetof(kiln_plugin_entry, import_state) + sizeof(kiln_plugin_entry::import_state)),
     static_cast<std::uint32_t>(offsetof(kiln_build_stamp, archs) + KILN_STAMP_ARCHS_SIZE)},
};

// The newest row must describe the headers kiln is built with: appending a field to a table
// without adding a row (and bumping the minor) fails here, not in the field.
static_assert(kAbiLayouts[std::size(kAbiLayouts) - 1].version == KILN_ABI_VERSION,
              "add a row to kAbiLayouts for the new ABI version");
static_assert(kAbiLayouts[std::size(kAbiLayouts) - 1].entry_size == sizeof(kiln_plugin_entry),
              "kiln_plugin_entry grew: add a kAbiLayouts row for the version that added the field");
static_assert((kAbiLayouts[std::size(kAbiLayouts) - 1].stamp_size + alignof(kiln_build_stamp) - 1) /
                      alignof(kiln_build_stamp) * alignof(kiln_build_stamp) ==
                  sizeof(kiln_build_stamp),
              "kiln_build_stamp grew: add a kAbiLayouts row for the version that added the field");

// The sizes `version` requires: the row of the newest listed version of the same major not
// above it. nullptr for a version of another major or older than every row.
inline const AbiLayout *abi_layout(std::uint32_t version) {
  const AbiLayout *found = nullptr;
  for (const auto &row : kAbiLayouts) {
    if (KILN_ABI_VERSION_MAJOR_OF(row.version) == KILN_ABI_VERSION_MAJOR_OF(version) && row.version <= version) {
      found = &row;
    }
  }
  return found;
}

// The smallest stamp any version of this major defines: what is read before its version is known.
inline constexpr std::uint32_t kMinStampSize = kAbiLayouts[0].stamp_size;

}  // namespace kiln::artifact
