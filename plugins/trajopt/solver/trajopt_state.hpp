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
#pragma once

#include <stdint.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>

#include "kiln/plugin.hpp"

namespace kiln_trajopt {
namespace state {

constexpr char kFormat[16] = "kiln.trajopt.st";
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = 0x01020304u;

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

// The slots as export_state sees them: published by the control thread after each recording solve,
// read by a setup thread at any time. A sequence lock whose writer never waits (as kiln.ik's).
class Snapshot {
 public:
  void reset(uint32_t slots, size_t words) {  // [setup-thread] allocates; every slot empty
    words_.reset(new std::atomic<uint32_t>[size_t{slots} * words]());
    slots_ = slots;
    per_slot_ = words;
    sequence_.store(0, std::memory_order_relaxed);
  }
  void clear() noexcept {
    words_.reset();
    slots_ = 0;
  }
  uint32_t slots() const noexcept { return slots_; }

  // [control-thread: real-time safe] slots [0, count) become valid[i], trajectory[i * (words - 1) ...].
  void publish(const float *trajectories, const uint8_t *valid, uint32_t count) noexcept {
    if (count > slots_) count = slots_;
    const size_t n = per_slot_ - 1;
    const uint64_t sequence = sequence_.load(std::memory_order_relaxed);
    sequence_.store(sequence + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (uint32_t i = 0; i < count; ++i) {
      std::atomic<uint32_t> *slot = words_.get() + size_t{i} * per_slot_;
      slot[0].store(valid[i] != 0 ? 1u : 0u, std::memory_order_relaxed);
      for (size_t j = 0; j < n; ++j) {
        uint32_t bits;
        std::memcpy(&bits, trajectories + size_t{i} * n + j, sizeof bits);
        slot[1 + j].store(bits, std::memory_order_relaxed);
      }
    }
    sequence_.store(sequence + 2, std::memory_order_release);
  }

  // [setup-thread] every slot's words into out; false when publishes kept overlapping.
  bool read(uint32_t *out, int attempts) const noexcept {
    const size_t words = size_t{slots_} * per_slot_;
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
  size_t per_slot_ = 1;
  std::atomic<uint64_t> sequence_{0};
};

inline void copy_padded(char *destination, size_t capacity, const char *source) {
  std::memset(destination, 0, capacity);
  const size_t n = std::strlen(source);
  std::memcpy(destination, source, n < capacity - 1 ? n : capacity - 1);
}

inline kiln_status write_blob(const Identity &self, const Snapshot &snapshot, void *buffer, size_t capacity,
                              size_t *size, kiln::plugin::Message &message) {
  const uint64_t needed = self.blob_size(snapshot.slots());
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
  header.horizon = self.horizon;
  header.slots = snapshot.slots();
  copy_padded(header.chain, sizeof header.chain, self.chain);
  copy_padded(header.robot, sizeof header.robot, self.robot);
  unsigned char *out = static_cast<unsigned char *>(buffer);
  std::memcpy(out, &header, sizeof header);
  std::unique_ptr<uint32_t[]> words(new uint32_t[size_t{snapshot.slots()} * self.words()]);
  if (!snapshot.read(words.get(), 1000)) {
    message.set("export_state: the control thread's solves kept overlapping 1000 attempts to copy the state");
    return KILN_ERR_STATE;
  }
  std::memcpy(out + sizeof header, words.get(), size_t{snapshot.slots()} * self.words() * 4u);
  return KILN_OK;
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
  const size_t n = self.words() - 1;
  for (uint32_t i = 0; i < h.slots; ++i) {
    uint32_t flag;
    std::memcpy(&flag, records + 4 * (size_t{i} * self.words()), sizeof flag);
    if (flag > 1) {
      message.format("import_state: slot %u: its valid word is %u, not 0 or 1", i, flag);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (flag == 0) continue;
    if (i >= max_slots) {
      message.format("import_state: slot %u holds a trajectory, but this instance has %u slots (max_batch)", i,
                     max_slots);
      return KILN_ERR_CAPACITY;
    }
    for (size_t j = 0; j < n; ++j) {
      float value;
      std::memcpy(&value, records + 4 * (size_t{i} * self.words() + 1 + j), sizeof value);
      if (!std::isfinite(value)) {
        message.format("import_state: slot %u: value %zu is not finite", i, j);
        return KILN_ERR_INVALID_ARGUMENT;
      }
    }
  }
  for (uint32_t i = 0; i < max_slots; ++i) {
    uint32_t flag = 0;
    if (i < h.slots) std::memcpy(&flag, records + 4 * (size_t{i} * self.words()), sizeof flag);
    valid[i] = flag != 0 ? 1 : 0;
    for (size_t j = 0; j < n; ++j) {
      float value = 0.0f;
      if (flag != 0) std::memcpy(&value, records + 4 * (size_t{i} * self.words() + 1 + j), sizeof value);
      trajectories[size_t{i} * n + j] = value;
    }
  }
  return KILN_OK;
}

}  // namespace state
}  // namespace kiln_trajopt
