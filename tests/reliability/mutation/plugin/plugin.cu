// The plugin the mutation suite (tests/reliability/test_mutation.cpp) builds with the nvcc and
// cmake backends. Every input the suite mutates reaches the compiled code, and the host-side
// marker below records the values seen, so the suite can read back from an artifact which
// inputs it was really built from.
#include <cstdint>
#include <cstring>

#include <kiln/ext/example.h>
#include <kiln/plugin.hpp>

#include "mutation.h"  // found only through the include directory inc/; no recipe declares it

// Present only where a CPATH directory holds it: the host compiler's environment.
#if __has_include("mutation_cpath.h")
#include "mutation_cpath.h"
#endif
#ifndef MUTATION_CPATH
#define MUTATION_CPATH 0
#endif
#ifndef MUTATION_ENV  // set only through the toolchain's environment (NVCC_APPEND_FLAGS, ...)
#define MUTATION_ENV 0
#endif
#ifndef MUTATION_DEFINE  // the recipe's define (cmake: its cmake_options)
#define MUTATION_DEFINE 0
#endif
#ifndef MUTATION_FLAG  // a -D in the recipe's flags
#define MUTATION_FLAG 0
#endif

#define MUTATION_STR2(x) #x
#define MUTATION_STR(x) MUTATION_STR2(x)

__global__ void kiln_mutation_kernel(float *out) {
#if __CUDA_ARCH__ >= 900
  if (out != nullptr) out[threadIdx.x] = 1.0f;  // device-only value
#endif
}

#ifndef __CUDA_ARCH__
// Host-only: what the suite reads back from the artifact.
__attribute__((used)) static const char kMutationMarker[] =
    "kiln-mutation host=1 header=" MUTATION_STR(MUTATION_HEADER) " define=" MUTATION_STR(MUTATION_DEFINE)
    " flag=" MUTATION_STR(MUTATION_FLAG) " env=" MUTATION_STR(MUTATION_ENV) " cpath=" MUTATION_STR(MUTATION_CPATH) ";";
#endif

namespace {

class MutationInstance final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  const void *get_interface(const char *id) const noexcept override;
};

double host_fma(const kiln_instance *, double a, double b, double c) { return a * b + c + MUTATION_HEADER; }

kiln_status saxpy(kiln_instance *, float, const float *, float *, uint32_t, char *message, size_t size) {
  kiln::plugin::Message(message, size).set("the mutation plugin has no saxpy");
  return KILN_ERR_UNSUPPORTED;
}

int32_t last_arch(const kiln_instance *) { return 0; }

const kiln_example_v1 kTable = {sizeof(kiln_example_v1), &host_fma, &saxpy, &last_arch};

const void *MutationInstance::get_interface(const char *id) const noexcept {
  return std::strcmp(id, KILN_EXAMPLE_INTERFACE_ID) == 0 ? &kTable : nullptr;
}

}  // namespace

KILN_PLUGIN(MutationInstance, "org.kiln.test.mutation", "1.0.0", KILN_EXAMPLE_INTERFACE_ID)
