// The readers' side of hot swap: the published version pointer and the registry of control
// threads, with quiescent-state-based reclamation as in userspace-RCU's urcu-qsbr.
//
// Every registered reader has a slot holding the grace period it last observed (0: offline).
// A reader announces a quiescent state by copying the global period into its slot when it
// changed (two loads and a compare; a store and a fence once per grace period), nothing else. The swap thread publishes a new version, advances the global
// period to P and waits until every online slot shows >= P: from then on no reader can still hold
// what was published before. Slots are allocated once (max_readers) and never move, so readers
// never allocate or lock; the Domain is shared with every SwapReader, so a reader outliving its
// Swappable touches live memory.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <kiln/swap.hpp>

namespace kiln::swap_detail {

// One cache line per reader: readers never write a line another reader writes.
struct alignas(64) ReaderSlot {
  std::atomic<std::uint64_t> period{0};  // 0: offline (a swap does not wait for it)
  std::atomic<bool> used{false};
  // The thread that last brought it online or announced a new period (its tid; 0: none yet),
  // noted once per grace period: a swap on that thread takes it offline for its wait, and a
  // swap held back by it says whether that thread still runs.
  std::atomic<std::int64_t> thread{0};
};

// A reader that held a grace period back past its timeout.
struct LaggingReader {
  std::size_t index = 0;
  std::int64_t thread = 0;  // 0: it never announced
  bool thread_exited = false;
};

// What acquire() returns once the Swappable is being destroyed: no table, no instance, serial 0.
extern const ServedVersion kRetiredVersion;

struct Domain {
  explicit Domain(std::size_t max_readers);

  // [setup-thread] A slot for a new reader, online at the current period; nullptr when full.
  ReaderSlot *claim();
  void release(ReaderSlot *slot) noexcept;

  // [swap thread] Make `version` the one acquire() returns. Sequentially consistent, so that a
  // reader coming online after a synchronize() read it offline sees this store.
  void publish(const ServedVersion *version) noexcept;
  // [swap thread] Starts a grace period: the period every reader must reach.
  std::uint64_t advance() noexcept;
  // Whether every online reader has passed `target` (no waiting).
  bool passed(std::uint64_t target) const noexcept;
  // Waits (sleeping briefly between looks) until passed(target) or the timeout. A reader of the
  // calling thread is offline meanwhile (urcu-qsbr's synchronize_rcu does the same): the wait
  // is a quiescent point for it, and it is online again afterwards.
  // Never throws; waits are serialized by the caller (the swap's mutex).
  bool wait(std::uint64_t target, std::chrono::milliseconds timeout) noexcept;
  // The online readers that have not passed `target`.
  std::vector<LaggingReader> lagging(std::uint64_t target) const;

  std::atomic<const ServedVersion *> current{nullptr};
  const void *owner = nullptr;  // the SwapCore, for the debug build's check in acquire()
  alignas(64) std::atomic<std::uint64_t> period{1};
  std::size_t capacity;
  std::unique_ptr<ReaderSlot[]> slots;
  std::unique_ptr<bool[]> parked;  // wait()'s own readers, taken offline (waits are serialized)
  std::mutex registry;  // claim/release only
};

// A reader's side of the protocol, on its own slot: SwapReader's quiescent(), offline() and
// online() are these.
void reader_quiescent(ReaderSlot &slot, const Domain &domain) noexcept;
void reader_offline(ReaderSlot &slot) noexcept;
void reader_online(ReaderSlot &slot, const Domain &domain) noexcept;

}  // namespace kiln::swap_detail
