// kiln plugins: the parts of a warm-start state blob (export_state / import_state) that kiln.ik and
// kiln.trajopt share: the byte-order mark, NUL-padded names, writing header + slot records, and
// checking and unpacking the records. Each plugin keeps its own header (format id, fields, version)
// and the checks and messages about it. Host code, plain C++.
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
