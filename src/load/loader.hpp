// Verify, dlopen, negotiate and bind one resolved, already-checked plugin artifact.
#pragma once

#include <memory>

#include <kiln/log.hpp>
#include <kiln/module.hpp>

#include "load/host_kernels.hpp"
#include "store/verification_records.hpp"

namespace kiln {

class Loader {
 public:
  // report arrives with resolution, compatibility, device and the resolve/check timings;
  // the verify/dlopen/bind timings and the negotiation results are filled in here.
  // Order matters: store safety and the file digest are checked on the very descriptor that
  // dlopen then maps, so no byte runs before it is verified (no check-then-swap window).
  // kernels: where "kiln.host.kernels/1" loads device-image artifacts from; empty: the plugin
  // is not offered the service (get_service answers NULL).
  // records: persisted verification records (store/verification_records.hpp); nullptr: none.
  static Module open(std::unique_ptr<LoadReport> report, std::uint32_t abi_required, const LogCallback &log,
                     std::shared_ptr<const load::KernelSource> kernels = {},
                     const store::VerificationRecords *records = nullptr);
};

}  // namespace kiln
