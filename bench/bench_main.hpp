// A bench's main after its options are parsed: the run's status, or, when it throws, the error on
// stderr (stdout flushed first, so the figures printed so far come before it) and kiln's exit code
// for a kiln error (docs/cli.md "Exit codes"), 1 for any other.
#pragma once

#include <cstdio>
#include <exception>

#include <kiln/errors.hpp>

namespace kiln_bench {

template <class Run>
int run_reporting_errors(const char *bench, Run run) {
  try {
    const int status = run();
    std::fflush(stdout);
    return status;
  } catch (const kiln::Error &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", bench, error.what());
    return error.exit_code();
  } catch (const std::exception &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", bench, error.what());
    return 1;
  }
}

}  // namespace kiln_bench
