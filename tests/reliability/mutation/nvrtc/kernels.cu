// The device images the mutation suite (tests/reliability/test_mutation.cpp) builds with the
// nvrtc backend.
#include "mutation.h"  // declared in the recipe, named through its include directory inc/

#ifndef MUTATION_FLAG  // a -D in the recipe's flags
#define MUTATION_FLAG 0
#endif

#ifndef __CUDA_ARCH__
// Host-only: NVRTC never compiles it, yet kiln keys the source's bytes.
static const int kHostOnly = 1;
#endif

extern "C" __global__ void mutation_kernel(float *out) {
  float value = MUTATION_HEADER + MUTATION_DEFINE + MUTATION_FLAG;
#if __CUDA_ARCH__ >= 900
  value += 1.0f;  // device-only value
#endif
  out[threadIdx.x] = value;
}
