// kiln tests: the doctest main. GPU cases (test suite "gpu") need a live CUDA device; where
// there is none, `kiln_tests --test-suite=gpu` says why and exits 77 (ctest's SKIP_RETURN_CODE).
// Cases that need something else of the machine (support/preconditions.hpp) are decided here,
// before the run, and skipped visibly where it is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstring>
#include <optional>

#include "device/discover.hpp"
#include "support/preconditions.hpp"

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
      kiln::test::report_skip("gpu tests", report.detail);
      return 77;
    }
  }
  doctest::Context context(argc, argv);
  kiln::test::apply_preconditions(context, argc, argv);
  return context.run();
}
