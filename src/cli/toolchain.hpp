// What build tools this machine has, for `kiln doctor`.
#pragma once

#include <nlohmann/json.hpp>

namespace kiln::cli {

// nvcc (KILN_NVCC, CUDA_HOME/CUDA_PATH, PATH, /usr/local/cuda/bin) with its version line, and
// whether NVRTC, nvJitLink and nvFatbin can be opened.
nlohmann::json describe_toolchain();

}  // namespace kiln::cli
