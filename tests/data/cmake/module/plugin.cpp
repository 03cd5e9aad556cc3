// The cmake test project's plugin: "kiln.example/1", host_fma(a, b, c) = a*b + c + N + GEN_VALUE
// + COMMON_BASE, so a loaded build shows the option, the generated header and the shared header it saw.
#include <cstdint>
#include <cstring>

#include "common.hpp"
#include "gen_values.h"
#include "kiln/ext/example.h"
#include "kiln/plugin.hpp"

#ifdef KILN_TEST_BROKEN
#error "kiln test project: the build fails on purpose (KILN_TEST_FAIL=build)"
#endif

namespace {

class CmakeTest final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  const void *get_interface(const char *interface_id) const noexcept override {
    return std::strcmp(interface_id, KILN_EXAMPLE_INTERFACE_ID) == 0 ? &table : nullptr;
  }
  static const kiln_example_v1 table;
};

double cmake_test_host_fma(const kiln_instance *, double a, double b, double c) {
  return a * b + c + KILN_TEST_N + GEN_VALUE + COMMON_BASE;
}

kiln_status cmake_test_saxpy(kiln_instance *, float, const float *, float *, uint32_t, char *message, size_t size) {
  kiln::plugin::Message(message, size).set("saxpy: the cmake test plugin has no device code");
  return KILN_ERR_UNSUPPORTED;
}

int32_t cmake_test_last_device_arch(const kiln_instance *) { return 0; }

const kiln_example_v1 CmakeTest::table = {sizeof(kiln_example_v1), &cmake_test_host_fma, &cmake_test_saxpy,
                                          &cmake_test_last_device_arch};

}  // namespace

KILN_PLUGIN(CmakeTest, KILN_TEST_PLUGIN_ID, "1.0.0", KILN_EXAMPLE_INTERFACE_ID)
