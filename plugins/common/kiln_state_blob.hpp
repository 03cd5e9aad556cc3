// kiln plugins: a solver plugin's warm-start state blob (export_state / import_state), all but what
// is the plugin's own: the header's frame (format id, version, byte-order mark, dof; the chain tag
// and robot name), writing header + slot records, reading and checking the header's frame, the
// blob's size and the records, unpacking them. Each plugin keeps the header's fields of its own
// (StateHeader<Fields>: slots and anything else), its format id and version, and the checks of
// its identity. Host code, plain C++.
//
// After the plugin's header come the snapshot's slots: records of words_per_slot 4-byte words,
// valid (0 or 1), then words_per_slot - 1 floats, in the writer's byte order.
#pragma once

#include <stdint.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>

#include "kiln/plugin.hpp"
#include "kiln_slot_snapshot.hpp"

namespace kiln_plugin_common {

// As the writer stored it: a reader of another byte order sees it reversed.
constexpr uint32_t kByteOrderMark = 0x01020304u;

// source into capacity bytes, truncated to capacity - 1 characters, the rest NUL.
inline void copy_padded(char *destination, size_t capacity, const char *source) {
  std::memset(destination, 0, capacity);
  const size_t n = std::strlen(source);
  std::memcpy(destination, source, n < capacity - 1 ? n : capacity - 1);
}

// The fields every plugin's state header starts with (offsets 0 to 27).
struct StateHeaderStart {
  char format[16];      // format id, NUL-padded
  uint32_t version;     // of the plugin's layout: a change of it is a new version
  uint32_t byte_order;  // kByteOrderMark as the writer stored it
  uint32_t dof;
};
static_assert(sizeof(StateHeaderStart) == 28, "the state header's start is fixed");

// A plugin's state header: the start, the plugin's own fields (a struct of 4-byte words with
// `slots` among them), the chain tag (KILN_FK_CHAIN_TAG: a hash of the whole generated chain) and
// the robot name (for messages only), NUL-padded.
template <class Fields>
struct StateHeader {
  StateHeaderStart start;
  Fields own;
  char chain[32];
  char robot[32];
};

// What the plugin is, for the header's identity fields.
struct StateIdentity {
  uint32_t dof;
  const char *chain;  // the chain tag
  const char *robot;
};

// What a plugin's blob is: its format id (at most 15 characters) and the layout version it writes
// and reads.
struct StateFormat {
  const char *id;
  uint32_t version;
};

// [setup-thread] export_state: a header's frame for this plugin (dof, chain tag, robot name from
// self) and `slots` slots; the plugin fills in its other fields.
template <class Header>
void fill_header(Header &header, const StateFormat &format, const StateIdentity &self, uint32_t slots) {
  copy_padded(header.start.format, sizeof header.start.format, format.id);
  header.start.version = format.version;
  header.start.byte_order = kByteOrderMark;
  header.start.dof = self.dof;
  header.own.slots = slots;
  copy_padded(header.chain, sizeof header.chain, self.chain);
  copy_padded(header.robot, sizeof header.robot, self.robot);
}

inline uint64_t blob_size(size_t header_size, size_t words_per_slot, uint64_t slots) {
  return header_size + slots * words_per_slot * 4u;
}

// [setup-thread] export_state: the header's header_size bytes, then the snapshot's records.
// buffer NULL: *size only.
inline kiln_status write_blob(const void *header, size_t header_size, const SlotSnapshot &snapshot, void *buffer,
                              size_t capacity, size_t *size, kiln::plugin::Message &message) {
  const uint64_t needed = blob_size(header_size, snapshot.words_per_slot(), snapshot.slots());
  *size = static_cast<size_t>(needed);
  if (buffer == nullptr) return KILN_OK;
  if (capacity < needed) {
    message.format("export_state: the buffer holds %zu bytes, the state needs %llu (ask with a NULL buffer first)",
                   capacity, static_cast<unsigned long long>(needed));
    return KILN_ERR_CAPACITY;
  }
  unsigned char *out = static_cast<unsigned char *>(buffer);
  std::memcpy(out, header, header_size);
  const size_t words = size_t{snapshot.slots()} * snapshot.words_per_slot();
  const char *const overlapped =
      "export_state: the control thread's solves kept overlapping 1000 attempts to copy the state";
  // Headers are a multiple of 4 bytes, so the records are aligned wherever an aligned buffer is.
  if (header_size % alignof(uint32_t) == 0 && reinterpret_cast<uintptr_t>(out) % alignof(uint32_t) == 0) {
    if (!snapshot.read(reinterpret_cast<uint32_t *>(out + header_size), 1000)) {
      message.set(overlapped);
      return KILN_ERR_STATE;
    }
  } else {
    std::unique_ptr<uint32_t[]> copy(new uint32_t[words]);
    if (!snapshot.read(copy.get(), 1000)) {
      message.set(overlapped);
      return KILN_ERR_STATE;
    }
    std::memcpy(out + header_size, copy.get(), words * 4u);
  }
  return KILN_OK;
}

// [setup-thread] import_state's first checks: a blob that holds a whole Header of this format,
// byte order and version. KILN_OK and *header (chain and robot NUL-terminated), or a refusal; the
// plugin then checks its identity fields.
template <class Header>
kiln_status read_header(const void *blob, size_t size, const StateFormat &format, Header *header,
                        kiln::plugin::Message &message) {
  char expected[sizeof header->start.format];
  copy_padded(expected, sizeof expected, format.id);
  const unsigned char *bytes = static_cast<const unsigned char *>(blob);
  if (bytes == nullptr || size < sizeof expected) {
    message.format("import_state: the blob is truncated: %zu bytes, a %s header has %zu", size, format.id,
                   sizeof(Header));
    return KILN_ERR_INVALID_ARGUMENT;
  }
  if (std::memcmp(bytes, expected, sizeof expected) != 0) {
    char found[sizeof expected + 1] = {};
    std::memcpy(found, bytes, sizeof expected);
    for (size_t k = 0; k < sizeof expected; ++k) {
      if (found[k] != '\0' && (found[k] < 0x20 || found[k] > 0x7e)) found[k] = '?';
    }
    message.format("import_state: not a %s blob (format id '%s'): it comes from another plugin", format.id, found);
    return KILN_ERR_UNSUPPORTED;
  }
  if (size < sizeof(Header)) {
    message.format("import_state: the blob is truncated: %zu bytes, a %s header has %zu", size, format.id,
                   sizeof(Header));
    return KILN_ERR_INVALID_ARGUMENT;
  }
  std::memcpy(header, bytes, sizeof(Header));
  header->chain[sizeof header->chain - 1] = '\0';
  header->robot[sizeof header->robot - 1] = '\0';
  if (header->start.byte_order != kByteOrderMark) {
    message.format("import_state: the blob was written with another byte order (mark 0x%08x, expected 0x%08x)",
                   header->start.byte_order, kByteOrderMark);
    return KILN_ERR_UNSUPPORTED;
  }
  if (header->start.version != format.version) {
    message.format("import_state: %s version %u; this plugin reads version %u only", format.id, header->start.version,
                   format.version);
    return KILN_ERR_UNSUPPORTED;
  }
  return KILN_OK;
}

// How import_state's refusals of a record name what it holds, e.g. "a solution", "max_batch at
// activate", "joint" (slot %u holds <held> ... (<slots_from>); slot %u: <value> %zu is not finite).
struct RecordWording {
  const char *held;
  const char *slots_from;
  const char *value;
};

// [setup-thread] Checks blob_slots records: valid words 0 or 1, no valid slot at or past max_slots,
// the valid slots' floats finite. KILN_OK, or a refusal naming the slot.
inline kiln_status check_records(const unsigned char *records, uint32_t blob_slots, size_t words_per_slot,
                                 uint32_t max_slots, const RecordWording &wording, kiln::plugin::Message &message) {
  for (uint32_t i = 0; i < blob_slots; ++i) {
    uint32_t valid;
    std::memcpy(&valid, records + 4 * (size_t{i} * words_per_slot), sizeof valid);
    if (valid > 1) {
      message.format("import_state: slot %u: its valid word is %u, not 0 or 1", i, valid);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (valid == 0) continue;
    if (i >= max_slots) {
      message.format("import_state: slot %u holds %s, but this instance has %u slots (%s)", i, wording.held, max_slots,
                     wording.slots_from);
      return KILN_ERR_CAPACITY;
    }
    for (size_t j = 0; j + 1 < words_per_slot; ++j) {
      float value;
      std::memcpy(&value, records + 4 * (size_t{i} * words_per_slot + 1 + j), sizeof value);
      if (!std::isfinite(value)) {
        message.format("import_state: slot %u: %s %zu is not finite", i, wording.value, j);
        return KILN_ERR_INVALID_ARGUMENT;
      }
    }
  }
  return KILN_OK;
}

// [setup-thread] After the plugin's checks of its header: the blob's size against the header's
// slots, then its records (check_records).
inline kiln_status check_body(const unsigned char *blob, size_t size, size_t header_size, uint32_t blob_slots,
                              size_t words_per_slot, uint32_t max_slots, const RecordWording &wording,
                              kiln::plugin::Message &message) {
  const uint64_t expected = blob_size(header_size, words_per_slot, blob_slots);
  if (size != expected) {
    message.format("import_state: the blob is %s: %zu bytes, a blob of %u slots of %zu floats has %llu",
                   size < expected ? "truncated" : "longer than its header says", size, blob_slots, words_per_slot - 1,
                   static_cast<unsigned long long>(expected));
    return KILN_ERR_INVALID_ARGUMENT;
  }
  return check_records(blob + header_size, blob_slots, words_per_slot, max_slots, wording, message);
}

// Unpacks checked records into `slots` slots of the solver's arrays (slots * (words_per_slot - 1)
// floats, slots flags); slots at or past blob_slots, and invalid ones, empty and zero.
inline void unpack_records(const unsigned char *records, uint32_t blob_slots, size_t words_per_slot, uint32_t slots,
                           float *values, uint8_t *valid) {
  const size_t floats = words_per_slot - 1;
  for (uint32_t i = 0; i < slots; ++i) {
    uint32_t flag = 0;
    if (i < blob_slots) std::memcpy(&flag, records + 4 * (size_t{i} * words_per_slot), sizeof flag);
    valid[i] = flag != 0 ? 1 : 0;
    for (size_t j = 0; j < floats; ++j) {
      float value = 0.0f;
      if (flag != 0) std::memcpy(&value, records + 4 * (size_t{i} * words_per_slot + 1 + j), sizeof value);
      values[size_t{i} * floats + j] = value;
    }
  }
}

}  // namespace kiln_plugin_common
