// A test whose precondition is missing is skipped visibly -- doctest counts it skipped, never
// passed, and the reason reaches ctest's output -- and a binary that cannot run its suite exits 77.
// These run this very test binary on one case, in a child process.
#include <doctest/doctest.h>

#include <unistd.h>

#include <string>

#include "support/fixtures.hpp"
#include "support/checks.hpp"

using kiln::test::read_text;
using kiln::test::run_shell;
using kiln::test::shell_quote;
using kiln::test::TempDir;

namespace {

using kiln::test::contains;

std::string this_binary() {
  char path[4096];
  const ssize_t size = ::readlink("/proc/self/exe", path, sizeof path - 1);
  REQUIRE(size > 0);
  return std::string(path, static_cast<std::size_t>(size));
}

}  // namespace

TEST_CASE("tests: a case whose precondition is missing is reported SKIPPED with why, and not counted as passed") {
  TempDir dir;
  const auto skip_file = dir / "skipped.txt";
  // No xxhsum on this PATH: the digest reference case cannot run.
  const auto result = run_shell("env PATH=/nonexistent KILN_TEST_SKIP_FILE=" + shell_quote(skip_file.string()) + " " +
                                shell_quote(this_binary()) + " " + shell_quote("-tc=digest: matches the xxhsum*") + " --no-colors");
  CAPTURE(result.out);
  CHECK(result.exit_code == 0);
  const std::string line = "SKIPPED digest: matches the xxhsum reference tool: xxhsum (the reference tool) is not installed";
  CHECK(contains(result.out, line));
  CHECK(contains(result.out, "test cases: 0 | 0 passed | 0 failed"));
  CHECK(read_text(skip_file) == line + "\n");
}

TEST_CASE("tests: the gpu suite without a device exits 77 (ctest: Skipped) and records why") {
  TempDir dir;
  const auto skip_file = dir / "skipped.txt";
  const auto result = run_shell("env KILN_LIBCUDA=/nonexistent/libcuda.so.1 KILN_TEST_SKIP_FILE=" +
                                shell_quote(skip_file.string()) + " " + shell_quote(this_binary()) + " --test-suite=gpu");
  CAPTURE(result.out);
  CHECK(result.exit_code == 77);
  CHECK(contains(result.out, "SKIPPED gpu tests: "));
  CHECK(contains(read_text(skip_file), "SKIPPED gpu tests: "));
  CHECK(contains(read_text(skip_file), "/nonexistent/libcuda.so.1"));
}
