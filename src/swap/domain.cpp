#include "swap/domain.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace kiln::swap_detail {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "readers need lock-free 64-bit atomics");
static_assert(std::atomic<const ServedVersion *>::is_always_lock_free, "readers need a lock-free pointer");

const ServedVersion kRetiredVersion{};

namespace {

std::int64_t this_thread_id() noexcept {
  static thread_local std::int64_t id = 0;
  if (id == 0) id = static_cast<std::int64_t>(::syscall(SYS_gettid));
  return id;
}

}  // namespace

Domain::Domain(std::size_t max_readers)
    : capacity(max_readers), slots(new ReaderSlot[max_readers]), parked(new bool[max_readers]()) {}

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
  slot->thread.store(0, std::memory_order_relaxed);
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

bool Domain::wait(std::uint64_t target, std::chrono::milliseconds timeout) noexcept {
  // The caller's own online readers would hold it back the whole timeout: offline meanwhile.
  const std::int64_t me = this_thread_id();
  for (std::size_t i = 0; i < capacity; ++i) {
    ReaderSlot &slot = slots[i];
    parked[i] = slot.thread.load(std::memory_order_relaxed) == me && slot.period.load(std::memory_order_relaxed) != 0;
    if (parked[i]) reader_offline(slot);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // A 1 kHz loop passes a quiescent point every millisecond: spin briefly, then sleep in small
  // steps rather than burn a core the control loop may need.
  bool passed_it = true;
  for (int spins = 0; !passed(target); ++spins) {
    if (std::chrono::steady_clock::now() >= deadline) {
      passed_it = false;
      break;
    }
    if (spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  for (std::size_t i = 0; i < capacity; ++i) {
    if (parked[i]) reader_online(slots[i], *this);
  }
  return passed_it;
}

std::vector<LaggingReader> Domain::lagging(std::uint64_t target) const {
  std::vector<LaggingReader> found;
  for (std::size_t i = 0; i < capacity; ++i) {
    const std::uint64_t seen = slots[i].period.load(std::memory_order_seq_cst);
    if (seen == 0 || seen >= target) continue;
    LaggingReader reader;
    reader.index = i;
    reader.thread = slots[i].thread.load(std::memory_order_relaxed);
    reader.thread_exited = reader.thread != 0 && ::syscall(SYS_tgkill, ::getpid(), reader.thread, 0) != 0 && errno == ESRCH;
    found.push_back(reader);
  }
  return found;
}

void reader_quiescent(ReaderSlot &slot, const Domain &domain) noexcept {
  // urcu-qsbr's rcu_quiescent_state: while no grace period started since the last announcement
  // there is nothing to announce (one load of the period, one of the reader's own slot).
  const std::uint64_t now = domain.period.load(std::memory_order_acquire);
  if (slot.period.load(std::memory_order_relaxed) == now) return;
  // A new period, or the reader was offline: announce it followed by a full fence, as online()
  // does. Without the fence a reader coming online here could read the published version before
  // its announcement is visible to the swap thread (store buffering), which would then see it
  // offline and let the grace period pass under it. Once per grace period, not per cycle.
  slot.period.store(now, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  slot.thread.store(this_thread_id(), std::memory_order_relaxed);
}

void reader_offline(ReaderSlot &slot) noexcept { slot.period.store(0, std::memory_order_release); }

void reader_online(ReaderSlot &slot, const Domain &domain) noexcept {
  slot.period.store(domain.period.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  slot.thread.store(this_thread_id(), std::memory_order_relaxed);
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
