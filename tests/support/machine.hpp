// What this machine has, as test preconditions (support/preconditions.hpp): each returns why a
// case cannot run here, or nullopt when it can.
//
//   TEST_CASE("..." * kiln::test::skip_if(kiln::test::no_nvjitlink)) { ... }
#pragma once

#include <optional>
#include <string>

namespace kiln::test {

std::optional<std::string> no_nvrtc();         // NVRTC not found (nvrtc recipes)
std::optional<std::string> no_nvjitlink();     // nvJitLink not found (JIT links, LTO)
std::optional<std::string> no_nvfatbin();      // nvFatbin not found
std::optional<std::string> no_toolchain();     // no nvcc or no host C++ compiler
std::optional<std::string> no_cmake_toolchain();  // no cmake, or no_toolchain (cmake recipes need both)
std::optional<std::string> cuda_driver();      // a CUDA driver works here (for no-driver cases)
std::optional<std::string> no_cuda_stub();     // no toolkit link stub libcuda.so
std::optional<std::string> no_gpu();           // no live CUDA device
std::optional<std::string> no_ptx_jit();       // device 0's driver is older than NVRTC: it refuses NVRTC's PTX
std::optional<std::string> ptx_jit();          // device 0's driver JIT-compiles NVRTC's PTX
std::optional<std::string> not_sm_90();        // device 0 is not sm_90

}  // namespace kiln::test
