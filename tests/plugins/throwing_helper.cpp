// A plugin built with the KILN_PLUGIN helper whose instance class throws; the helper's
// trampolines must turn every throw into a status and message (or a log line), so nothing
// reaches the host. What throws is chosen by KILN_TEST_HOSTILE at each call:
//   helper-create-throws (the constructor) | helper-activate-throws | helper-activate-int |
//   helper-get-interface-throws | helper-deactivate-throws
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "kiln/ext/example.h"
#include "kiln/plugin.hpp"

namespace {

bool mode(const char *wanted) {
  const char *value = std::getenv("KILN_TEST_HOSTILE");
  return value != nullptr && std::strcmp(value, wanted) == 0;
}

double helper_fma(const kiln_instance *, double a, double b, double c) { return a * b + c; }
kiln_status helper_saxpy(kiln_instance *, float, const float *, float *, uint32_t, char *message, size_t size) {
  kiln::plugin::Message(message, size).set("saxpy: no device code");
  return KILN_ERR_UNSUPPORTED;
}
int32_t helper_arch(const kiln_instance *) { return 0; }
const kiln_example_v1 kTable = {sizeof(kiln_example_v1), &helper_fma, &helper_saxpy, &helper_arch};

class Throwing final : public kiln::plugin::Instance {
 public:
  explicit Throwing(const kiln_host_services *host) : Instance(host) {
    if (mode("helper-create-throws")) throw std::runtime_error("constructor exploded");
  }
  kiln_status activate(const kiln_activate_params &, kiln::plugin::Message &) override {
    if (mode("helper-activate-throws")) throw std::runtime_error("activate exploded");
    if (mode("helper-activate-int")) throw 5;
    return KILN_OK;
  }
  void deactivate() override {
    if (mode("helper-deactivate-throws")) throw std::runtime_error("deactivate exploded");
  }
  const void *get_interface(const char *id) const override {
    if (mode("helper-get-interface-throws")) throw std::runtime_error("get_interface exploded");
    return std::strcmp(id, KILN_EXAMPLE_INTERFACE_ID) == 0 ? &kTable : nullptr;
  }
};

}  // namespace

KILN_PLUGIN(Throwing, "org.kiln.test.throwing_helper", "1.0.0", KILN_EXAMPLE_INTERFACE_ID)
