// A host-only kiln plugin: "kiln.example/1" with host_fma(a, b, c) = a * b + c.
#include <cstdint>
#include <cstring>

#include <kiln/ext/example.h>
#include <kiln/plugin.hpp>

namespace {

class ExampleFma final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  const void *get_interface(const char *interface_id) const noexcept override {
    return std::strcmp(interface_id, KILN_EXAMPLE_INTERFACE_ID) == 0 ? &table : nullptr;
  }
  static const kiln_example_v1 table;
};

double example_host_fma(const kiln_instance *, double a, double b, double c) { return a * b + c; }

kiln_status example_saxpy(kiln_instance *, float, const float *, float *, uint32_t, char *message, size_t size) {
  kiln::plugin::Message(message, size).set("saxpy: this example plugin has no device code");
  return KILN_ERR_UNSUPPORTED;
}

int32_t example_last_device_arch(const kiln_instance *) { return 0; }

const kiln_example_v1 ExampleFma::table = {sizeof(kiln_example_v1), &example_host_fma, &example_saxpy,
                                           &example_last_device_arch};

}  // namespace

KILN_PLUGIN(ExampleFma, "example.fma", "1.0.0", KILN_EXAMPLE_INTERFACE_ID)
