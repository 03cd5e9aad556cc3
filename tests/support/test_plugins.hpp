// What this build's test plugins (tests/plugins) hold, as a test precondition
// (support/preconditions.hpp). kiln_tests only: it reads kiln_tests' KILN_TEST_FATBIN_DIR.
#pragma once

#include <optional>
#include <string>

namespace kiln::test {

// A build without nvcc (KILN_CUDA off: the aarch64 cross build) makes the example plugins host
// code, so cases about the archs their fat binaries hold cannot run.
inline std::optional<std::string> example_is_host_code() {
  if (std::string(KILN_TEST_FATBIN_DIR).empty()) {
    return std::string("no nvcc in this build: the example plugins are host code");
  }
  return std::nullopt;
}

}  // namespace kiln::test
