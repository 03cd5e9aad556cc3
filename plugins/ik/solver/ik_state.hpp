// kiln IK plugin: the warm-start state a hot swap carries (export_state / import_state), host code.
//
// The state is each slot's last solution (abi/kiln/ext/ik.h, "Warm start"). The blob, in the
// exporting machine's byte order (a blob moves between versions inside one process):
//
//   offset  size  field
//   0       16    format id "kiln.ik.state", NUL-padded
//   16      4     format version (kFormat.version)
//   20      4     byte-order mark 0x01020304 as the writer stored it
//   24      4     dof
//   28      4     slots
//   32      32    chain: the generated chain's tag (KILN_FK_CHAIN_TAG, "chain_<16 hex digits>", a
//                 hash of the whole generated Chain: robot, links, joints, limits, axes, geometry)
//   64      32    robot name (the URDF's, truncated to 31 characters; for messages only)
//   96      ...   slots records of (1 + dof) 4-byte words: valid (0 or 1), then dof floats
//
// Version rule: a change of this layout is a new version; a plugin reads the versions it knows and
// refuses any other (KILN_ERR_UNSUPPORTED), so a successor never misreads a blob.
//
// The snapshot, the header's start, the records' writing, checks and unpacking are the plugin kit's
// (plugins/common/kiln_slot_snapshot.hpp, kiln_state_blob.hpp); the header's layout and the checks
// of the chain are here.
#pragma once

#include <stdint.h>

#include <cstddef>
#include <cstring>

#include "kiln/plugin.hpp"
#include "kiln_slot_snapshot.hpp"
#include "kiln_state_blob.hpp"

namespace kiln_ik {
namespace state {

constexpr kiln_plugin_common::StateFormat kFormat{"kiln.ik.state", 1};

struct Fields {
  uint32_t slots;
};
using Header = kiln_plugin_common::StateHeader<Fields>;
static_assert(sizeof(Header) == 96, "the blob's header layout is fixed");

constexpr size_t words_per_slot(uint32_t dof) { return size_t{1} + dof; }

using Identity = kiln_plugin_common::StateIdentity;

// [setup-thread] export_state: header + snapshot.slots() records. buffer NULL: the size only.
inline kiln_status write_blob(const Identity &self, const kiln_plugin_common::SlotSnapshot &snapshot, void *buffer,
                              size_t capacity, size_t *size, kiln::plugin::Message &message) {
  Header header{};
  kiln_plugin_common::fill_header(header, kFormat, self, snapshot.slots());
  return kiln_plugin_common::write_blob(&header, sizeof header, snapshot, buffer, capacity, size, message);
}

// A blob import_state accepted: its records, `slots` of them, none past the instance's slots.
struct Parsed {
  const unsigned char *records = nullptr;
  uint32_t slots = 0;
};

// [setup-thread] Checks a blob against this plugin and an instance with max_slots slots. KILN_OK
// and *parsed, or a refusal naming what differs; nothing is changed either way.
inline kiln_status parse_blob(const Identity &self, uint32_t max_slots, const void *blob, size_t size, Parsed *parsed,
                              kiln::plugin::Message &message) {
  Header header;
  kiln_status status = kiln_plugin_common::read_header(blob, size, kFormat, &header, message);
  if (status != KILN_OK) return status;
  if (header.start.dof != self.dof) {
    message.format(
        "import_state: the blob is for a chain of %u joints (robot '%s'); this plugin's chain has %u (robot "
        "'%s')",
        header.start.dof, header.robot, self.dof, self.robot);
    return KILN_ERR_UNSUPPORTED;
  }
  if (std::strcmp(header.chain, self.chain) != 0) {
    message.format("import_state: the blob is for chain %s (robot '%s'); this plugin solves chain %s (robot '%s')",
                   header.chain, header.robot, self.chain, self.robot);
    return KILN_ERR_UNSUPPORTED;
  }
  const unsigned char *bytes = static_cast<const unsigned char *>(blob);
  const kiln_plugin_common::RecordWording wording{"a solution", "max_batch at activate", "joint"};
  status = kiln_plugin_common::check_body(bytes, size, sizeof(Header), header.own.slots, words_per_slot(self.dof),
                                          max_slots, wording, message);
  if (status != KILN_OK) return status;
  parsed->records = bytes + sizeof(Header);
  parsed->slots = header.own.slots < max_slots ? header.own.slots : max_slots;
  return KILN_OK;
}

// Unpacks parsed records into the solver's arrays (slots * dof floats, slots flags), the rest empty.
inline void unpack(const Parsed &parsed, uint32_t dof, uint32_t slots, float *q, uint8_t *valid) {
  kiln_plugin_common::unpack_records(parsed.records, parsed.slots, words_per_slot(dof), slots, q, valid);
}

}  // namespace state
}  // namespace kiln_ik
