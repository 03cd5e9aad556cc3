// kiln TrajOpt plugin, host-only form (no CUDA: a cross build such as aarch64 CI, KILN_CUDA OFF): the
// same instance (../solver/trajopt_solver.hpp) over a Device that refuses every device, so only
// activate(-1), the host path, works. module/CMakeLists.txt picks it when CUDA is not enabled.
#include <cstring>

#include "kiln/plugin.hpp"
#include "trajopt_solver.hpp"

#ifndef KILN_TRAJOPT_PLUGIN_ID
#define KILN_TRAJOPT_PLUGIN_ID "org.kiln.trajopt"
#endif
#define KILN_TRAJOPT_PLUGIN_VERSION "1.0.0+host"

namespace {

using namespace kiln_trajopt;

class NoDevice {
 public:
  explicit NoDevice(const kiln_host_services *) noexcept {}
  kiln_status place(const kiln_activate_params &, kiln::plugin::Message &) noexcept { return KILN_OK; }  // open refuses
  kiln_status open(int32_t ordinal, size_t, size_t, unsigned char **, unsigned char **, kiln::plugin::Message &message) noexcept {
    message.format("activate: device %d requested, but this build of the plugin has no CUDA code (host only: "
                   "activate with device_ordinal -1)", static_cast<int>(ordinal));
    return KILN_ERR_UNSUPPORTED;
  }
  kiln_status select(const char *, kiln::plugin::Message &) noexcept { return KILN_ERR_UNSUPPORTED; }
  kiln_status to_device(void *, const void *, size_t, void *, const char *, kiln::plugin::Message &) noexcept { return KILN_ERR_UNSUPPORTED; }
  kiln_status to_host(void *, const void *, size_t, void *, const char *, kiln::plugin::Message &) noexcept { return KILN_ERR_UNSUPPORTED; }
  kiln_status launch_seeds(const KernelParams &, unsigned, void *, const char *, kiln::plugin::Message &) noexcept { return KILN_ERR_UNSUPPORTED; }
  kiln_status launch_finalize(const KernelParams &, unsigned, void *, const char *, kiln::plugin::Message &) noexcept { return KILN_ERR_UNSUPPORTED; }
  kiln_status synchronize(void *, const char *, kiln::plugin::Message &) noexcept { return KILN_ERR_UNSUPPORTED; }
  kiln_status record(void *, kiln::plugin::Message &) noexcept { return KILN_ERR_UNSUPPORTED; }
  kiln_status wait_event(kiln::plugin::Message &) noexcept { return KILN_ERR_UNSUPPORTED; }
  bool finished() noexcept { return true; }
  void *stream() const noexcept { return nullptr; }
  void describe(char *text, size_t size) const noexcept { std::snprintf(text, size, "host only"); }
  void close() noexcept {}
};

using TrajoptPlugin = TrajoptSolver<NoDevice>;

}  // namespace

KILN_PLUGIN(TrajoptPlugin, KILN_TRAJOPT_PLUGIN_ID, KILN_TRAJOPT_PLUGIN_VERSION, KILN_TRAJOPT_INTERFACE_ID,
            KILN_SELFTEST_INTERFACE_ID, KILN_ROBOTMODEL_INTERFACE_ID)
