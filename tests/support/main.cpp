// kiln tests: the doctest main. GPU cases (test suite "gpu") need a live CUDA device; where
// there is none, `kiln_tests --test-suite=gpu` says why and exits 77 (ctest's SKIP_RETURN_CODE).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <optional>

#include "device/discover.hpp"

int main(int argc, char **argv) {
  bool gpu_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--test-suite=gpu") == 0 || std::strcmp(argv[i], "-ts=gpu") == 0) {
      gpu_only = true;
    }
  }
  if (gpu_only) {
    const kiln::DeviceReport report = kiln::device::discover(std::nullopt);
    if (report.state != kiln::DriverState::ok) {
      std::printf("SKIPPED gpu tests: %s\n", report.detail.c_str());
      return 77;
    }
  }
  doctest::Context context(argc, argv);
  return context.run();
}
