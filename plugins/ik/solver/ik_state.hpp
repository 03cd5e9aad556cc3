// kiln IK plugin: the warm-start state a hot swap carries (export_state / import_state), host code.
//
// The state is each slot's last solution (abi/kiln/ext/ik.h, "Warm start"). The blob, in the
// exporting machine's byte order (a blob moves between versions inside one process):
//
//   offset  size  field
//   0       16    format id "kiln.ik.state", NUL-padded
//   16      4     format version (kStateVersion)
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
// The snapshot, the records' writing, checks and unpacking are kiln.trajopt's too
// (plugins/common/kiln_slot_snapshot.hpp, kiln_state_blob.hpp); the header and its checks are here.
#pragma once

#include <stdint.h>

#include <cstddef>
#include <cstring>

#include "kiln/plugin.hpp"
#include "kiln_slot_snapshot.hpp"
#include "kiln_state_blob.hpp"

namespace kiln_ik {
namespace state {

constexpr char kFormat[16] = "kiln.ik.state";
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = kiln_plugin_common::kByteOrderMark;

struct Header {
  char format[16];
  uint32_t version;
  uint32_t byte_order;
  uint32_t dof;
  uint32_t slots;
  char chain[32];
  char robot[32];
};
static_assert(sizeof(Header) == 96, "the blob's header layout is fixed");

constexpr size_t words_per_slot(uint32_t dof) { return size_t{1} + dof; }
constexpr uint64_t blob_size(uint32_t dof, uint64_t slots) { return sizeof(Header) + slots * words_per_slot(dof) * 4u; }

// What the plugin is, for the blob's identity fields.
struct Identity {
  uint32_t dof;
  const char *chain;  // the chain tag
  const char *robot;
};

// [setup-thread] export_state: header + snapshot.slots() records. buffer NULL: the size only.
inline kiln_status write_blob(const Identity &self, const kiln_plugin_common::SlotSnapshot &snapshot, void *buffer,
                              size_t capacity, size_t *size, kiln::plugin::Message &message) {
  using kiln_plugin_common::copy_padded;
  Header header{};
  copy_padded(header.format, sizeof header.format, kFormat);
  header.version = kVersion;
  header.byte_order = kByteOrder;
  header.dof = self.dof;
  header.slots = snapshot.slots();
  copy_padded(header.chain, sizeof header.chain, self.chain);
  copy_padded(header.robot, sizeof header.robot, self.robot);
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
  const unsigned char *bytes = static_cast<const unsigned char *>(blob);
  if (size < sizeof(kFormat)) {
    message.format("import_state: the blob is truncated: %zu bytes, a kiln.ik.state header has %zu", size,
                   sizeof(Header));
    return KILN_ERR_INVALID_ARGUMENT;
  }
  char format[sizeof kFormat + 1] = {};
  std::memcpy(format, bytes, sizeof kFormat);
  if (std::memcmp(bytes, kFormat, sizeof kFormat) != 0) {
    for (size_t k = 0; k < sizeof kFormat; ++k) {
      if (format[k] != '\0' && (format[k] < 0x20 || format[k] > 0x7e)) format[k] = '?';
    }
    message.format("import_state: not a kiln.ik.state blob (format id '%s'): it comes from another plugin", format);
    return KILN_ERR_UNSUPPORTED;
  }
  if (size < sizeof(Header)) {
    message.format("import_state: the blob is truncated: %zu bytes, a kiln.ik.state header has %zu", size,
                   sizeof(Header));
    return KILN_ERR_INVALID_ARGUMENT;
  }
  Header header;
  std::memcpy(&header, bytes, sizeof header);
  header.chain[sizeof header.chain - 1] = '\0';
  header.robot[sizeof header.robot - 1] = '\0';
  if (header.byte_order != kByteOrder) {
    message.format("import_state: the blob was written with another byte order (mark 0x%08x, expected 0x%08x)",
                   header.byte_order, kByteOrder);
    return KILN_ERR_UNSUPPORTED;
  }
  if (header.version != kVersion) {
    message.format("import_state: kiln.ik.state version %u; this plugin reads version %u only", header.version,
                   kVersion);
    return KILN_ERR_UNSUPPORTED;
  }
  if (header.dof != self.dof) {
    message.format("import_state: the blob is for a chain of %u joints (robot '%s'); this plugin's chain has %u (robot "
                   "'%s')",
                   header.dof, header.robot, self.dof, self.robot);
    return KILN_ERR_UNSUPPORTED;
  }
  if (std::strcmp(header.chain, self.chain) != 0) {
    message.format("import_state: the blob is for chain %s (robot '%s'); this plugin solves chain %s (robot '%s')",
                   header.chain, header.robot, self.chain, self.robot);
    return KILN_ERR_UNSUPPORTED;
  }
  const uint64_t expected = blob_size(self.dof, header.slots);
  if (size != expected) {
    message.format("import_state: the blob is %s: %zu bytes, a blob of %u slots of %u joints has %llu",
                   size < expected ? "truncated" : "longer than its header says", size, header.slots, self.dof,
                   static_cast<unsigned long long>(expected));
    return KILN_ERR_INVALID_ARGUMENT;
  }
  const unsigned char *records = bytes + sizeof(Header);
  const kiln_plugin_common::RecordWording wording{"a solution", "max_batch at activate", "joint"};
  const kiln_status status =
      kiln_plugin_common::check_records(records, header.slots, words_per_slot(self.dof), max_slots, wording, message);
  if (status != KILN_OK) return status;
  parsed->records = records;
  parsed->slots = header.slots < max_slots ? header.slots : max_slots;
  return KILN_OK;
}

// Unpacks parsed records into the solver's arrays (slots * dof floats, slots flags), the rest empty.
inline void unpack(const Parsed &parsed, uint32_t dof, uint32_t slots, float *q, uint8_t *valid) {
  kiln_plugin_common::unpack_records(parsed.records, parsed.slots, words_per_slot(dof), slots, q, valid);
}

}  // namespace state
}  // namespace kiln_ik
