// What build tools this machine has, for `kiln doctor`.
#pragma once

#include <nlohmann/json.hpp>

namespace kiln::cli {

// nvcc (KILN_NVCC, CUDA_HOME/CUDA_PATH, PATH, /usr/local/cuda/bin) with its version line, and
// NVRTC, nvJitLink and nvFatbin as the JIT backend finds them (builder::JitToolchain::describe():
// found, path, version, searched, detail), NVRTC's archs and the JIT build identity.
nlohmann::json describe_toolchain();

}  // namespace kiln::cli
