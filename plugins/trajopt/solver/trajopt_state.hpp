// kiln TrajOpt plugin: the warm-start state a hot swap carries (export_state / import_state), host code.
//
// The state is each slot's last solution, the trajectory q_1..q_N (abi/kiln/ext/trajopt.h, "Warm
// start"). The blob, in the exporting machine's byte order (a blob moves between versions inside
// one process):
//
//   offset  size  field
//   0       16    format id "kiln.trajopt.st", NUL-padded
//   16      4     format version (kFormat.version)
//   20      4     byte-order mark 0x01020304 as the writer stored it
//   24      4     dof
//   28      4     horizon N
//   32      4     slots
//   36      28    reserved, 0
//   64      32    chain: the FK header's tag (KILN_FK_CHAIN_TAG, a hash of the whole generated chain)
//   96      32    robot name (for messages only)
//   128     ...   slots records of (1 + N * dof) 4-byte words: valid (0 or 1), then N * dof floats
//
// A blob of another format, version, byte order, chain, dof or horizon is refused
// (KILN_ERR_UNSUPPORTED): a plugin of another N cannot start from this one's trajectories.
//
// The snapshot, the header's start, the records' writing, checks and unpacking are the plugin kit's
// (plugins/common/kiln_slot_snapshot.hpp, kiln_state_blob.hpp); the header's layout and the checks
// of the chain and horizon are here.
#pragma once

#include <stdint.h>

#include <cstddef>
#include <cstring>

#include "kiln/plugin.hpp"
#include "kiln_slot_snapshot.hpp"
#include "kiln_state_blob.hpp"

namespace kiln_trajopt {
namespace state {

constexpr kiln_plugin_common::StateFormat kFormat{"kiln.trajopt.st", 1};

struct Fields {
  uint32_t horizon;
  uint32_t slots;
  uint32_t reserved[7];
};
using Header = kiln_plugin_common::StateHeader<Fields>;
static_assert(sizeof(Header) == 128, "the blob's header layout is fixed");

// The chain's identity and the horizon.
struct Identity {
  kiln_plugin_common::StateIdentity chain;
  uint32_t horizon;
  size_t words() const { return size_t{1} + size_t{chain.dof} * horizon; }  // per slot
};

inline kiln_status write_blob(const Identity &self, const kiln_plugin_common::SlotSnapshot &snapshot, void *buffer,
                              size_t capacity, size_t *size, kiln::plugin::Message &message) {
  Header header{};
  kiln_plugin_common::fill_header(header, kFormat, self.chain, snapshot.slots());
  header.own.horizon = self.horizon;
  return kiln_plugin_common::write_blob(&header, sizeof header, snapshot, buffer, capacity, size, message);
}

// [setup-thread] Checks a blob; on KILN_OK writes max_slots slots into trajectories / valid (slots
// past the blob's empty). A refused blob changes nothing.
inline kiln_status read_blob(const Identity &self, uint32_t max_slots, const void *blob, size_t size,
                             float *trajectories, uint8_t *valid, kiln::plugin::Message &message) {
  Header h;
  kiln_status status = kiln_plugin_common::read_header(blob, size, kFormat, &h, message);
  if (status != KILN_OK) return status;
  const kiln_plugin_common::StateIdentity &chain = self.chain;
  if (h.start.dof != chain.dof || h.own.horizon != self.horizon || std::strcmp(h.chain, chain.chain) != 0) {
    message.format(
        "import_state: the blob is for chain %s (robot '%s', %u joints, N = %u); this plugin plans for "
        "chain %s (robot '%s', %u joints, N = %u)",
        h.chain, h.robot, h.start.dof, h.own.horizon, chain.chain, chain.robot, chain.dof, self.horizon);
    return KILN_ERR_UNSUPPORTED;
  }
  const unsigned char *bytes = static_cast<const unsigned char *>(blob);
  const kiln_plugin_common::RecordWording wording{"a trajectory", "max_batch", "value"};
  status = kiln_plugin_common::check_body(bytes, size, sizeof(Header), h.own.slots, self.words(), max_slots, wording,
                                          message);
  if (status != KILN_OK) return status;
  kiln_plugin_common::unpack_records(bytes + sizeof(Header), h.own.slots, self.words(), max_slots, trajectories, valid);
  return KILN_OK;
}

}  // namespace state
}  // namespace kiln_trajopt
