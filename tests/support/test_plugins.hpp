// What this build's test plugins (tests/plugins) hold, as a test precondition
// (support/preconditions.hpp). kiln_tests only: it reads kiln_tests' KILN_TEST_FATBIN_DIR.
#pragma once

#include <kiln/stamp.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "support/fixtures.hpp"

namespace kiln::test {

// A build without nvcc (KILN_CUDA off: the aarch64 cross build) makes the example plugins host
// code, so cases about the archs their fat binaries hold cannot run.
inline std::optional<std::string> example_is_host_code() {
  if (std::string(KILN_TEST_FATBIN_DIR).empty()) {
    return std::string("no nvcc in this build: the example plugins are host code");
  }
  return std::nullopt;
}

// The host-only test plugin's bytes with its build stamp naming `content_key`, as the store's
// copy of a published file carries it: a plugin entry's file that verify, export and import
// accept, for tests that write entries through the store's staging and commit directly.
inline std::string host_only_plugin_stamped(const std::string &content_key) {
  std::string bytes = read_text(KILN_TEST_PLUGIN_HOST_ONLY);
  const std::size_t at = bytes.find(std::string(KILN_STAMP_MAGIC, KILN_STAMP_MAGIC_SIZE));
  if (at == std::string::npos || content_key.size() != KILN_STAMP_KEY_SIZE) {
    throw std::logic_error("host_only_plugin_stamped: no stamp in the test plugin, or a key of the wrong size");
  }
  std::memcpy(&bytes[at + offsetof(kiln_build_stamp, content_key)], content_key.data(), KILN_STAMP_KEY_SIZE);
  return bytes;
}

}  // namespace kiln::test
