// The reports of unloaded Modules, kept for the next load of the same resolution.
//
// A warm load's largest piece of work of its own was copying the resolution (a dozen strings,
// the provenance map) into the report the Module keeps, and freeing it at unload. A Module
// hands its report back here when it ends; the next load of the same resolution (the same
// Storage serial: the same manifest and entry) takes it with the resolution, and the
// compatibility found for the same device, already in place. A report of another resolution
// is refilled by assignment, which reuses its strings' storage. A few are kept per Runtime.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <kiln/module.hpp>

namespace kiln::load {

class ReportPool {
 public:
  struct Taken {
    std::unique_ptr<LoadReport> report;
    // report->resolution is already this serial's; and so is report->compatibility when the
    // report was checked against device choice `checked_device` (LoadOptions::device) before.
    bool resolved = false;
    int checked_device = kNotChecked;
  };
  static constexpr int kNotChecked = -2;

  // A report for a load of `serial` (0: none remembered): a spare one, or a new one.
  Taken take(std::uint64_t serial);
  // From a Module that ends (never throws: a report that cannot be kept is freed).
  void give_back(std::uint64_t serial, int checked_device, std::unique_ptr<LoadReport> report) noexcept;

 private:
  static constexpr std::size_t kMaxSpare = 8;
  struct Spare {
    std::uint64_t serial;
    int checked_device;
    std::unique_ptr<LoadReport> report;
  };
  std::mutex mutex_;
  std::vector<Spare> spare_;
};

}  // namespace kiln::load
