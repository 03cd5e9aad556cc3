// The mutation suite, locally: no wrong cache hit, each backend's recipe built again and again in
// one cache, with the real toolchains (mutation_cases.hpp says what is mutated and what must hit).
#include <doctest/doctest.h>

#include "reliability/mutation_cases.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

TEST_SUITE("mutation") {
  TEST_CASE("mutation: nvcc backend: every keyed input misses, nothing else does" *
            kiln::test::skip_if(kiln::test::no_toolchain)) {
    kiln::reliability::mutation::nvcc_mutations();
  }

  TEST_CASE("mutation: cmake backend: every keyed input misses, nothing else does" *
            kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
    kiln::reliability::mutation::cmake_mutations();
  }

  TEST_CASE("mutation: nvrtc backend: every keyed input misses, nothing else does" *
            kiln::test::skip_if(kiln::test::no_nvrtc)) {
    kiln::reliability::mutation::nvrtc_mutations();
  }
}
