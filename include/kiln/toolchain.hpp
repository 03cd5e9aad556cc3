// kiln: the build toolchain this machine has, found exactly as a build finds it (Runtime::toolchain).
#pragma once

#include <string>
#include <vector>

namespace kiln {

// One tool or library a build backend uses.
struct ToolStatus {
  bool found = false;                 // located (and, for libraries, every entry point resolved)
  std::string path;                   // where: a path, or the soname dlopen accepted
  std::string version;                // nvcc: its build line ("Build cuda_13.0.r13.0/compiler...");
                                      // host compiler, cmake: the first --version line; libraries: "13.0"
  std::string release;                // nvcc: "13.0.48"; empty otherwise
  std::vector<std::string> searched;  // libraries: each candidate and dlopen's answer
  std::string detail;                 // why it is not found or does not run, and the fix
};

struct ToolchainReport {
  ToolStatus nvcc;           // "nvcc" recipes: nvcc (KILN_NVCC, CUDA_HOME, CUDA_PATH, PATH, /usr/local/cuda)
  ToolStatus host_compiler;  // ... and the host C++ compiler it drives (KILN_HOST_CXX, CXX, g++)
  ToolStatus cmake;          // "cmake" recipes: cmake (KILN_CMAKE, PATH), besides nvcc and the host compiler
  ToolStatus nvrtc;          // "nvrtc" recipes: NVRTC, nvJitLink and nvFatbin, opened in process
  ToolStatus nvjitlink;
  ToolStatus nvfatbin;
  std::vector<int> nvrtc_archs;  // compute capabilities NVRTC compiles for: 75, 80, 86, ...
  std::string jit_identity;      // "nvrtc=13.0;nvjitlink=13.0" (what keys nvrtc builds)
};

}  // namespace kiln
