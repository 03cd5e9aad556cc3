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
#pragma once

#include <stdint.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>

#include "kiln/plugin.hpp"

namespace kiln_ik {
namespace state {

constexpr char kFormat[16] = "kiln.ik.state";
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = 0x01020304u;

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

inline void copy_padded(char *destination, size_t capacity, const char *source) {
  std::memset(destination, 0, capacity);
  std::strncpy(destination, source, capacity - 1);
}

// The slots as export_state sees them: a copy of each slot's last solution that the control thread
// publishes after every solve and that a setup thread may read at any time. A sequence lock whose
// writer never waits: the writer makes the sequence odd, stores, makes it even again; a reader
// copies and retries when the sequence moved. Every word is an atomic, so no access races.
class Snapshot {
 public:
  // [setup-thread] slots empty, for `slots` slots of `dof` joints; allocates.
  void reset(uint32_t slots, uint32_t dof) {
    words_.reset(new std::atomic<uint32_t>[size_t{slots} * words_per_slot(dof)]());
    slots_ = slots;
    dof_ = dof;
    sequence_.store(0, std::memory_order_relaxed);
  }
  // [setup-thread] nothing held.
  void clear() noexcept {
    words_.reset();
    slots_ = 0;
  }
  uint32_t slots() const noexcept { return slots_; }

  // [control-thread: real-time safe] Slots [0, count) are now valid[i] / q[i * dof ...]. Also
  // import_state's way in, on a setup thread while no solve runs (one writer at a time).
  void publish(const float *q, const uint8_t *valid, uint32_t count) noexcept {
    if (count > slots_) count = slots_;
    const uint64_t sequence = sequence_.load(std::memory_order_relaxed);
    sequence_.store(sequence + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (uint32_t i = 0; i < count; ++i) {
      std::atomic<uint32_t> *slot = words_.get() + size_t{i} * words_per_slot(dof_);
      slot[0].store(valid[i] != 0 ? 1u : 0u, std::memory_order_relaxed);
      for (uint32_t j = 0; j < dof_; ++j) {
        uint32_t bits;
        std::memcpy(&bits, q + size_t{i} * dof_ + j, sizeof bits);
        slot[1 + j].store(bits, std::memory_order_relaxed);
      }
    }
    sequence_.store(sequence + 2, std::memory_order_release);
  }

  // [setup-thread, concurrently with publish] Copies every slot's words into out (slots() *
  // words_per_slot(dof) words). false when a publish kept overlapping the copy for `attempts` tries.
  bool read(uint32_t *out, int attempts) const noexcept {
    const size_t words = size_t{slots_} * words_per_slot(dof_);
    for (int attempt = 0; attempt < attempts; ++attempt) {
      const uint64_t before = sequence_.load(std::memory_order_acquire);
      if ((before & 1u) == 0) {
        for (size_t k = 0; k < words; ++k) out[k] = words_[k].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (sequence_.load(std::memory_order_relaxed) == before) return true;
      }
      std::this_thread::yield();
    }
    return false;
  }

 private:
  std::unique_ptr<std::atomic<uint32_t>[]> words_;
  uint32_t slots_ = 0;
  uint32_t dof_ = 0;
  std::atomic<uint64_t> sequence_{0};
};

// What the plugin is, for the blob's identity fields.
struct Identity {
  uint32_t dof;
  const char *chain;  // the chain tag
  const char *robot;
};

// [setup-thread] export_state: header + snapshot.slots() records. buffer NULL: the size only.
inline kiln_status write_blob(const Identity &self, const Snapshot &snapshot, void *buffer, size_t capacity,
                              size_t *size, kiln::plugin::Message &message) {
  const uint64_t needed = blob_size(self.dof, snapshot.slots());
  *size = static_cast<size_t>(needed);
  if (buffer == nullptr) return KILN_OK;
  if (capacity < needed) {
    message.format("export_state: the buffer holds %zu bytes, the state needs %llu (ask with a NULL buffer first)",
                   capacity, static_cast<unsigned long long>(needed));
    return KILN_ERR_CAPACITY;
  }
  Header header{};
  copy_padded(header.format, sizeof header.format, kFormat);
  header.version = kVersion;
  header.byte_order = kByteOrder;
  header.dof = self.dof;
  header.slots = snapshot.slots();
  copy_padded(header.chain, sizeof header.chain, self.chain);
  copy_padded(header.robot, sizeof header.robot, self.robot);
  unsigned char *out = static_cast<unsigned char *>(buffer);
  std::memcpy(out, &header, sizeof header);
  // The records are 4-byte words after a 96-byte header: aligned wherever the buffer is.
  if (reinterpret_cast<uintptr_t>(out) % alignof(uint32_t) == 0) {
    if (!snapshot.read(reinterpret_cast<uint32_t *>(out + sizeof header), 1000)) {
      message.set("export_state: the control thread's solves kept overlapping 1000 attempts to copy the state");
      return KILN_ERR_STATE;
    }
  } else {
    std::unique_ptr<uint32_t[]> words(new uint32_t[size_t{snapshot.slots()} * words_per_slot(self.dof)]);
    if (!snapshot.read(words.get(), 1000)) {
      message.set("export_state: the control thread's solves kept overlapping 1000 attempts to copy the state");
      return KILN_ERR_STATE;
    }
    std::memcpy(out + sizeof header, words.get(), size_t{snapshot.slots()} * words_per_slot(self.dof) * 4u);
  }
  return KILN_OK;
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
  const size_t words = words_per_slot(self.dof);
  for (uint32_t i = 0; i < header.slots; ++i) {
    uint32_t valid;
    std::memcpy(&valid, records + 4 * (size_t{i} * words), sizeof valid);
    if (valid > 1) {
      message.format("import_state: slot %u: its valid word is %u, not 0 or 1", i, valid);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (valid == 0) continue;
    if (i >= max_slots) {
      message.format("import_state: slot %u holds a solution, but this instance has %u slots (max_batch at activate)", i,
                     max_slots);
      return KILN_ERR_CAPACITY;
    }
    for (uint32_t j = 0; j < self.dof; ++j) {
      float value;
      std::memcpy(&value, records + 4 * (size_t{i} * words + 1 + j), sizeof value);
      if (!std::isfinite(value)) {
        message.format("import_state: slot %u: joint %u is not finite", i, j);
        return KILN_ERR_INVALID_ARGUMENT;
      }
    }
  }
  parsed->records = records;
  parsed->slots = header.slots < max_slots ? header.slots : max_slots;
  return KILN_OK;
}

// Unpacks parsed records into the solver's arrays (slots * dof floats, slots flags), the rest empty.
inline void unpack(const Parsed &parsed, uint32_t dof, uint32_t slots, float *q, uint8_t *valid) {
  const size_t words = words_per_slot(dof);
  for (uint32_t i = 0; i < slots; ++i) {
    uint32_t flag = 0;
    if (i < parsed.slots) std::memcpy(&flag, parsed.records + 4 * (size_t{i} * words), sizeof flag);
    valid[i] = flag != 0 ? 1 : 0;
    for (uint32_t j = 0; j < dof; ++j) {
      float value = 0.0f;
      if (flag != 0) std::memcpy(&value, parsed.records + 4 * (size_t{i} * words + 1 + j), sizeof value);
      q[size_t{i} * dof + j] = value;
    }
  }
}

}  // namespace state
}  // namespace kiln_ik
