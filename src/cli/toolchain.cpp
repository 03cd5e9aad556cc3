#include "cli/toolchain.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "builder/nvrtc.hpp"

namespace kiln::cli {
namespace {

std::string env(const char *name) {
  const char *value = ::secure_getenv(name);
  return value != nullptr ? value : "";
}

bool executable(const std::string &path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

std::string find_nvcc() {
  if (executable(env("KILN_NVCC"))) return env("KILN_NVCC");
  for (const char *home : {"CUDA_HOME", "CUDA_PATH"}) {
    if (!env(home).empty() && executable(env(home) + "/bin/nvcc")) return env(home) + "/bin/nvcc";
  }
  const std::string path = env("PATH");
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const std::string dir = path.substr(start, end - start);
    if (!dir.empty() && executable(dir + "/nvcc")) return dir + "/nvcc";
    start = end + 1;
  }
  if (executable("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return "";
}

std::string last_line_of(const std::string &command) {
  std::string out, line;
  if (FILE *pipe = ::popen(command.c_str(), "r")) {
    std::array<char, 512> buffer{};
    while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
      line = buffer.data();
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      if (!line.empty()) out = line;
    }
    ::pclose(pipe);
  }
  return out;
}

}  // namespace

nlohmann::json describe_toolchain() {
  nlohmann::json out;
  const std::string nvcc = find_nvcc();
  out["nvcc"] = {{"found", !nvcc.empty()}, {"path", nvcc}};
  if (!nvcc.empty()) out["nvcc"]["version"] = last_line_of("'" + nvcc + "' --version 2>/dev/null");
  // The JIT backend's libraries exactly as a build would find them (KILN_NVRTC, sonames,
  // CUDA_HOME/CUDA_PATH/usr/local/cuda lib64): found, path, version, every place searched.
  const nlohmann::json jit = builder::JitToolchain::instance().describe();
  for (const char *library : {"nvrtc", "nvjitlink", "nvfatbin"}) out[library] = jit[library];
  out["nvrtc_archs"] = jit["supported_archs"];
  out["jit_identity"] = builder::JitToolchain::instance().identity();
  return out;
}

}  // namespace kiln::cli
