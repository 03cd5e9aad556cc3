#include "swap/domain.hpp"

#include <thread>

namespace kiln::swap_detail {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "readers need lock-free 64-bit atomics");
static_assert(std::atomic<const ServedVersion *>::is_always_lock_free, "readers need a lock-free pointer");

Domain::Domain(std::size_t max_readers) : capacity(max_readers), slots(new ReaderSlot[max_readers]) {}

ReaderSlot *Domain::claim() {
  std::lock_guard<std::mutex> lock(registry);
  for (std::size_t i = 0; i < capacity; ++i) {
    ReaderSlot &slot = slots[i];
    if (!slot.used.load(std::memory_order_relaxed)) {
      slot.used.store(true, std::memory_order_relaxed);
      slot.period.store(period.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      return &slot;
    }
  }
  return nullptr;
}

void Domain::release(ReaderSlot *slot) noexcept {
  if (slot == nullptr) return;
  slot->period.store(0, std::memory_order_release);  // nothing held: never waited for again
  std::lock_guard<std::mutex> lock(registry);
  slot->used.store(false, std::memory_order_relaxed);
}

void Domain::publish(const ServedVersion *version) noexcept { current.store(version, std::memory_order_seq_cst); }

std::uint64_t Domain::advance() noexcept { return period.fetch_add(1, std::memory_order_seq_cst) + 1; }

bool Domain::passed(std::uint64_t target) const noexcept {
  for (std::size_t i = 0; i < capacity; ++i) {
    // Acquire: what the reader did before announcing happens before what the swap does next.
    const std::uint64_t seen = slots[i].period.load(std::memory_order_seq_cst);
    if (seen != 0 && seen < target) return false;
  }
  return true;
}

bool Domain::wait(std::uint64_t target, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // A 1 kHz loop passes a quiescent point every millisecond: spin briefly, then sleep in small
  // steps rather than burn a core the control loop may need.
  for (int spins = 0; !passed(target); ++spins) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return true;
}

void reader_quiescent(ReaderSlot &slot, const Domain &domain) noexcept {
  // urcu-qsbr's rcu_quiescent_state: copy the global period, release-store it.
  slot.period.store(domain.period.load(std::memory_order_acquire), std::memory_order_release);
}

void reader_offline(ReaderSlot &slot) noexcept { slot.period.store(0, std::memory_order_release); }

void reader_online(ReaderSlot &slot, const Domain &domain) noexcept {
  slot.period.store(domain.period.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace kiln::swap_detail

namespace kiln {

SwapReader::SwapReader(std::shared_ptr<swap_detail::Domain> domain, swap_detail::ReaderSlot *slot) noexcept
    : domain_(std::move(domain)), slot_(slot) {}

SwapReader::SwapReader(SwapReader &&other) noexcept : domain_(std::move(other.domain_)), slot_(other.slot_) {
  other.slot_ = nullptr;
}

SwapReader &SwapReader::operator=(SwapReader &&other) noexcept {
  if (this != &other) {
    if (domain_) domain_->release(slot_);
    domain_ = std::move(other.domain_);
    slot_ = other.slot_;
    other.slot_ = nullptr;
  }
  return *this;
}

SwapReader::~SwapReader() {
  if (domain_) domain_->release(slot_);
}

void SwapReader::quiescent() noexcept { swap_detail::reader_quiescent(*slot_, *domain_); }

void SwapReader::offline() noexcept { swap_detail::reader_offline(*slot_); }

void SwapReader::online() noexcept { swap_detail::reader_online(*slot_, *domain_); }

}  // namespace kiln
