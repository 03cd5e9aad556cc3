// A two-unit test plugin for build on miss: its answer depends on a generated header, a
// declared header, a define and the other unit, so tests can see each input reach the binary.
#include <kiln/ext/example.h>
#include <kiln/plugin.hpp>

#include "common.h"
#include "gen_values.h"  // written by the recipe's generator into {gen}

double helper_value();  // helper.cpp

__global__ void kiln_build_test_kernel(float *out) {
  if (out != nullptr) out[threadIdx.x] = static_cast<float>(GEN_VALUE);
}

namespace {

class TestInstance final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  const void *get_interface(const char *id) const noexcept override;
};

double host_fma(const kiln_instance *, double a, double b, double c) {
  return a * b + c + GEN_VALUE + helper_value();
}

kiln_status saxpy(kiln_instance *, float, const float *, float *, uint32_t, char *message, size_t size) {
  kiln::plugin::Message(message, size).set("the build-test plugin has no saxpy");
  return KILN_ERR_UNSUPPORTED;
}

int32_t last_arch(const kiln_instance *) { return 0; }

const kiln_example_v1 kTable = {sizeof(kiln_example_v1), &host_fma, &saxpy, &last_arch};

const void *TestInstance::get_interface(const char *id) const noexcept {
  return std::strcmp(id, KILN_EXAMPLE_INTERFACE_ID) == 0 ? &kTable : nullptr;
}

}  // namespace

KILN_PLUGIN(TestInstance, "org.kiln.test.build", "1.0.0", KILN_EXAMPLE_INTERFACE_ID)
