// kiln's test plugin without device code: interface "kiln.example/1" with host_fma only.
//
// Built twice (tests/plugins/CMakeLists.txt): as kiln_test_host_only with the normal ABI range,
// and as kiln_test_abi2 with -DKILN_PLUGIN_ABI_MIN/MAX = 2.0, a plugin no 1.x host can bind.
// activate accepts any device ordinal (there is no device work); saxpy is unsupported.
#include <cstdint>
#include <cstring>

#include "kiln/ext/example.h"
#include "kiln/plugin.hpp"

#ifndef KILN_TEST_PLUGIN_ID
#define KILN_TEST_PLUGIN_ID "org.kiln.test.host_only"
#endif

namespace {

class HostOnly final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;

  const void *get_interface(const char *interface_id) const noexcept override {
    return std::strcmp(interface_id, KILN_EXAMPLE_INTERFACE_ID) == 0 ? &table : nullptr;
  }

  static const kiln_example_v1 table;
};

double host_only_host_fma(const kiln_instance *instance, double a, double b, double c) {
  (void)instance;
  return a * b + c;
}

kiln_status host_only_saxpy(kiln_instance *instance, float a, const float *x, float *y, uint32_t n, char *message,
                  size_t message_size) {
  (void)instance, (void)a, (void)x, (void)y, (void)n;
  kiln::plugin::Message(message, message_size).set("saxpy: this plugin has no device code");
  return KILN_ERR_UNSUPPORTED;
}

int32_t host_only_last_device_arch(const kiln_instance *instance) {
  (void)instance;
  return 0;
}

const kiln_example_v1 HostOnly::table = {sizeof(kiln_example_v1), &host_only_host_fma, &host_only_saxpy,
                                           &host_only_last_device_arch};

}  // namespace

KILN_PLUGIN(HostOnly, KILN_TEST_PLUGIN_ID, "1.0.0", KILN_EXAMPLE_INTERFACE_ID)
