// kiln plugins: the warm-start slots as export_state sees them, shared by kiln.ik and kiln.trajopt.
// Host code, plain C++ (nvcc, g++, the split form's host part alike).
//
// Each slot is words_per_slot 4-byte words: a valid word (0 or 1), then the slot's floats' bits.
// The control thread publishes after each recording solve; a setup thread may read at any time.
// A sequence lock whose writer never waits: the writer makes the sequence odd, stores, makes it even
// again; a reader copies and retries when the sequence moved. Every word is an atomic, so no access
// races.
#pragma once

#include <stdint.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>

namespace kiln_plugin_common {

class SlotSnapshot {
 public:
  // [setup-thread] slots empty, for `slots` slots of `words_per_slot` words (1 + floats); allocates.
  void reset(uint32_t slots, size_t words_per_slot) {
    words_.reset(new std::atomic<uint32_t>[size_t{slots} * words_per_slot]());
    slots_ = slots;
    words_per_slot_ = words_per_slot;
    sequence_.store(0, std::memory_order_relaxed);
  }
  // [setup-thread] nothing held.
  void clear() noexcept {
    words_.reset();
    slots_ = 0;
  }
  uint32_t slots() const noexcept { return slots_; }
  size_t words_per_slot() const noexcept { return words_per_slot_; }

  // [control-thread: real-time safe] Slots [0, count) are now valid[i] and the floats
  // values[i * (words_per_slot - 1) ...]. Also import_state's way in, on a setup thread while no
  // solve runs (one writer at a time).
  void publish(const float *values, const uint8_t *valid, uint32_t count) noexcept {
    if (count > slots_) count = slots_;
    const size_t floats = words_per_slot_ - 1;
    const uint64_t sequence = sequence_.load(std::memory_order_relaxed);
    sequence_.store(sequence + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (uint32_t i = 0; i < count; ++i) {
      std::atomic<uint32_t> *slot = words_.get() + size_t{i} * words_per_slot_;
      slot[0].store(valid[i] != 0 ? 1u : 0u, std::memory_order_relaxed);
      for (size_t j = 0; j < floats; ++j) {
        uint32_t bits;
        std::memcpy(&bits, values + size_t{i} * floats + j, sizeof bits);
        slot[1 + j].store(bits, std::memory_order_relaxed);
      }
    }
    sequence_.store(sequence + 2, std::memory_order_release);
  }

  // [setup-thread, concurrently with publish] Copies every slot's words into out (slots() *
  // words_per_slot() words). false when a publish kept overlapping the copy for `attempts` tries.
  bool read(uint32_t *out, int attempts) const noexcept {
    const size_t words = size_t{slots_} * words_per_slot_;
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
  size_t words_per_slot_ = 1;
  std::atomic<uint64_t> sequence_{0};
};

}  // namespace kiln_plugin_common
