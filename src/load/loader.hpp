// Verify, dlopen, negotiate and bind one resolved, already-checked plugin artifact.
#pragma once

#include <kiln/log.hpp>
#include <kiln/module.hpp>

namespace kiln {

class Loader {
 public:
  // report arrives with resolution, compatibility, device and the resolve/check timings;
  // the verify/dlopen/bind timings and the negotiation results are filled in here.
  // Order matters: store safety and the file digest are checked on the very descriptor that
  // dlopen then maps, so no byte runs before it is verified (no check-then-swap window).
  static Module open(LoadReport report, std::uint32_t abi_required, const LogCallback &log);
};

}  // namespace kiln
