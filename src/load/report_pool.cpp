#include "load/report_pool.hpp"

#include <utility>

namespace kiln::load {

ReportPool::Taken ReportPool::take(std::uint64_t serial) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!spare_.empty()) {
      std::size_t chosen = spare_.size() - 1;  // the last given back, unless one of this serial waits
      for (std::size_t i = 0; serial != 0 && i < spare_.size(); ++i) {
        if (spare_[i].serial == serial) chosen = i;
      }
      Spare spare = std::move(spare_[chosen]);
      spare_.erase(spare_.begin() + static_cast<std::ptrdiff_t>(chosen));
      if (serial != 0 && spare.serial == serial) return {std::move(spare.report), true, spare.checked_device};
      return {std::move(spare.report), false, kNotChecked};
    }
  }
  return {std::make_unique<LoadReport>(), false, kNotChecked};
}

void ReportPool::give_back(std::uint64_t serial, int checked_device, std::unique_ptr<LoadReport> report) noexcept {
  if (!report) return;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare_.size() >= kMaxSpare) spare_.erase(spare_.begin());  // the oldest goes
    spare_.push_back({serial, checked_device, std::move(report)});
  } catch (...) {
    // out of memory: the report is freed by its unique_ptr
  }
}

}  // namespace kiln::load
