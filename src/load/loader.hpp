// Verify, dlopen, negotiate and bind one resolved, already-checked plugin artifact.
#pragma once

#include <memory>

#include <kiln/log.hpp>
#include <kiln/module.hpp>

#include "load/host_kernels.hpp"
#include "load/report_pool.hpp"
#include "store/maintenance/verification_records.hpp"

namespace kiln {

// Where a loaded Module's report goes when it ends (load/report_pool.hpp), with the Storage
// serial it was resolved under (0: none) and the device choice its compatibility was checked for.
struct ReportHome {
  std::shared_ptr<load::ReportPool> pool;
  std::uint64_t serial = 0;
  int device = 0;
};

class Loader {
 public:
  // report arrives with resolution, compatibility, device and the resolve/check timings;
  // the verify/dlopen/bind timings and the negotiation results are filled in here.
  // Order matters: store safety and the file digest are checked on the very descriptor that
  // dlopen then maps, so no byte runs before it is verified (no check-then-swap window).
  // kernels: where "kiln.host.kernels/1" loads device-image artifacts from; empty: the plugin
  // is not offered the service (get_service answers NULL).
  // records: persisted verification records (store/maintenance/verification_records.hpp); nullptr: none.
  // home.serial: the Storage's serial of the remembered resolution (0: none); the file's
  // descriptor is kept under it, and the next load of that resolution reuses it instead of
  // opening the file again (load/mapped_files.hpp). home.pool: where the Module's report goes
  // when it ends (load/report_pool.hpp), with the serial and the device choice it was checked for.
  static Module open(std::unique_ptr<LoadReport> report, std::uint32_t abi_required, const LogCallback &log,
                     std::shared_ptr<const load::KernelSource> kernels = {},
                     const store::VerificationRecords *records = nullptr, ReportHome home = {});
};

}  // namespace kiln
