// kiln TrajOpt plugin: the warm-start state a hot swap carries (export_state / import_state), host code.
//
// The state is each slot's last solution, the trajectory q_1..q_N (abi/kiln/ext/trajopt.h, "Warm
// start"). The blob, in the exporting machine's byte order (a blob moves between versions inside
// one process):
//
//   offset  size  field
//   0       16    format id "kiln.trajopt.st", NUL-padded
//   16      4     format version (kVersion)
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
// The snapshot, the records' writing, checks and unpacking are kiln.ik's too
// (plugins/common/kiln_slot_snapshot.hpp, kiln_state_blob.hpp); the header and its checks are here.
#pragma once

#include <stdint.h>

#include <cstddef>
#include <cstring>

#include "kiln/plugin.hpp"
#include "kiln_slot_snapshot.hpp"
#include "kiln_state_blob.hpp"

namespace kiln_trajopt {
namespace state {

constexpr char kFormat[16] = "kiln.trajopt.st";
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = kiln_plugin_common::kByteOrderMark;

struct Header {
  char format[16];
  uint32_t version;
  uint32_t byte_order;
  uint32_t dof;
  uint32_t horizon;
  uint32_t slots;
  uint32_t reserved[7];
  char chain[32];
  char robot[32];
};
static_assert(sizeof(Header) == 128, "the blob's header layout is fixed");

struct Identity {
  uint32_t dof;
  uint32_t horizon;
  const char *chain;
  const char *robot;
  size_t words() const { return size_t{1} + size_t{dof} * horizon; }  // per slot
  uint64_t blob_size(uint64_t slots) const { return sizeof(Header) + slots * words() * 4u; }
};

inline kiln_status write_blob(const Identity &self, const kiln_plugin_common::SlotSnapshot &snapshot, void *buffer,
                              size_t capacity, size_t *size, kiln::plugin::Message &message) {
  using kiln_plugin_common::copy_padded;
  Header header{};
  copy_padded(header.format, sizeof header.format, kFormat);
  header.version = kVersion;
  header.byte_order = kByteOrder;
  header.dof = self.dof;
  header.horizon = self.horizon;
  header.slots = snapshot.slots();
  copy_padded(header.chain, sizeof header.chain, self.chain);
  copy_padded(header.robot, sizeof header.robot, self.robot);
  return kiln_plugin_common::write_blob(&header, sizeof header, snapshot, buffer, capacity, size, message);
}

// [setup-thread] Checks a blob; on KILN_OK writes max_slots slots into trajectories / valid (slots
// past the blob's empty). A refused blob changes nothing.
inline kiln_status read_blob(const Identity &self, uint32_t max_slots, const void *blob, size_t size,
                             float *trajectories, uint8_t *valid, kiln::plugin::Message &message) {
  const unsigned char *bytes = static_cast<const unsigned char *>(blob);
  if (bytes == nullptr || size < sizeof(Header)) {
    message.format("import_state: the blob is truncated: %zu bytes, a kiln.trajopt.st header has %zu", size,
                   sizeof(Header));
    return bytes == nullptr || size < sizeof kFormat || std::memcmp(bytes, kFormat, sizeof kFormat) == 0
               ? KILN_ERR_INVALID_ARGUMENT
               : KILN_ERR_UNSUPPORTED;
  }
  Header h;
  std::memcpy(&h, bytes, sizeof h);
  h.chain[sizeof h.chain - 1] = '\0';
  h.robot[sizeof h.robot - 1] = '\0';
  if (std::memcmp(h.format, kFormat, sizeof kFormat) != 0) {
    message.set("import_state: not a kiln.trajopt.st blob: it comes from another plugin");
    return KILN_ERR_UNSUPPORTED;
  }
  if (h.byte_order != kByteOrder || h.version != kVersion) {
    message.format("import_state: kiln.trajopt.st version %u, byte-order mark 0x%08x; this plugin reads version %u, "
                   "0x%08x",
                   h.version, h.byte_order, kVersion, kByteOrder);
    return KILN_ERR_UNSUPPORTED;
  }
  if (h.dof != self.dof || h.horizon != self.horizon || std::strcmp(h.chain, self.chain) != 0) {
    message.format("import_state: the blob is for chain %s (robot '%s', %u joints, N = %u); this plugin plans for "
                   "chain %s (robot '%s', %u joints, N = %u)",
                   h.chain, h.robot, h.dof, h.horizon, self.chain, self.robot, self.dof, self.horizon);
    return KILN_ERR_UNSUPPORTED;
  }
  if (size != self.blob_size(h.slots)) {
    message.format("import_state: the blob has %zu bytes; %u slots take %llu", size, h.slots,
                   static_cast<unsigned long long>(self.blob_size(h.slots)));
    return KILN_ERR_INVALID_ARGUMENT;
  }
  const unsigned char *records = bytes + sizeof(Header);
  const kiln_plugin_common::RecordWording wording{"a trajectory", "max_batch", "value"};
  const kiln_status status =
      kiln_plugin_common::check_records(records, h.slots, self.words(), max_slots, wording, message);
  if (status != KILN_OK) return status;
  kiln_plugin_common::unpack_records(records, h.slots, self.words(), max_slots, trajectories, valid);
  return KILN_OK;
}

}  // namespace state
}  // namespace kiln_trajopt
