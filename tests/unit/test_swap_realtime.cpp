// The control thread's promise, proved: under a seccomp filter of its own that allows only the
// loop's clock_nanosleep and clock_gettime, with its heap calls counted, it cycles through
// 1000 swaps, rollbacks, refused swaps (failing self-test, shadow check, state import),
// retirements and unloads run on another thread, and makes no other system call and no heap
// call. The proof runs in kiln_test_rt_host (tests/hosts/rt): a forbidden call kills that
// process, not this one, and its malloc family counts where this binary's is left alone.
#include <doctest/doctest.h>

#include <csignal>
#include <optional>
#include <string>

#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"

using namespace kiln::test;

namespace {

std::optional<std::string> no_rt_host() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return std::string("a sanitizer's runtime replaces the malloc family and works on every thread; the proof runs in "
                     "the plain build");
#elif !defined(KILN_TEST_RT_HOST)
  return std::string("kiln_test_rt_host was not built: libseccomp is missing (libseccomp-dev, scripts/install-deps)");
#else
  return std::nullopt;
#endif
}

#ifdef KILN_TEST_RT_HOST
// Runs the host against a fresh store. Exit 77: the kernel refused the filter (reported).
std::optional<CommandResult> run_host(const std::string &options) {
  TempDir dir;
  CommandResult result = run_shell(shell_quote(KILN_TEST_RT_HOST) + " " + shell_quote((dir / "cache").string()) + " " + options);
  if (result.exit_code == 77) {
    report_skip("the control thread's proof", "the kernel refused the seccomp filter: " + result.out);
    return std::nullopt;
  }
  return result;
}

// The number after `label` in `text`; -1 when absent.
long number_after(const std::string &text, const std::string &label) {
  const auto at = text.find(label);
  if (at == std::string::npos) return -1;
  return std::stol(text.substr(at + label.size()));
}
#endif

}  // namespace

TEST_SUITE("swap") {

TEST_CASE("swap: the control thread makes no system call and no heap call through 1000 swaps, rollbacks, "
          "refusals and unloads" * skip_if(no_rt_host)) {
#ifdef KILN_TEST_RT_HOST
  // SCHED_FIFO where permitted (the host reports a refusal and goes on): the cycle figures it
  // prints are then those of a real-time thread.
  const auto result = run_host("--swaps 1000 --period-us 250 --fifo 80");
  if (!result) return;
  // The figures are context, not a verdict: this machine's scheduling decides them.
  MESSAGE(result->out << result->err);
  REQUIRE(result->exit_code == 0);
  CHECK(contains(result->out, "control thread filtered: only clock_nanosleep, clock_gettime allowed, on that "
                              "thread alone (the main thread's getppid answers "));
  CHECK(contains(result->out, "forbidden system calls 0, heap allocations 0, frees 0 (counted), wrong answers 0"));
  CHECK(number_after(result->out, "swaps ") + number_after(result->out, "rollbacks ") >= 1000);
  CHECK(number_after(result->out, "refused: self-test ") > 0);
  CHECK(number_after(result->out, "shadow check ") > 0);
  CHECK(number_after(result->out, "state import ") > 0);
  CHECK(number_after(result->out, "unloaded ") > 0);
  CHECK(number_after(result->out, "offline/online turns ") > 0);
#endif
}

TEST_CASE("swap: the control thread's filter and heap count catch a system call and an allocation made there" *
          skip_if(no_rt_host)) {
#ifdef KILN_TEST_RT_HOST
  SUBCASE("a system call: the host dies of SIGSYS, naming it") {
    const auto result = run_host("--swaps 40 --period-us 250 --probe syscall");
    if (!result) return;
    INFO(result->out << result->err);
    CHECK(result->exit_code == 128 + SIGSYS);
    CHECK(contains(result->out, "forbidden system call on the control thread: getppid"));
  }
  SUBCASE("an allocation: counted, and the host fails") {
    const auto result = run_host("--swaps 40 --period-us 250 --probe allocation");
    if (!result) return;
    INFO(result->out << result->err);
    CHECK(result->exit_code == 1);
    CHECK(contains(result->out, "heap allocations 1, frees 1 (counted)"));
  }
#endif
}

}  // TEST_SUITE
