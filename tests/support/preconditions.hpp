// Test preconditions, decided before any case runs; a case whose precondition is missing is
// skipped visibly, never counted as passed:
//
//   std::optional<std::string> no_nvjitlink();  // nullopt: present; else why not
//   TEST_CASE("jit: ..." * kiln::test::skip_if(no_nvjitlink)) { ... }
//
// main (tests/support/main.cpp) decides each registered precondition once, for the cases the
// command line selects (its test-suite, test-case and source-file filters), and excludes the
// cases whose precondition is missing from the run:
// doctest counts them as skipped, and each one is printed as "SKIPPED <case>: <why>" and
// appended to $KILN_TEST_SKIP_FILE, which ctest prints after its summary (tests/CMakeLists.txt).
#pragma once

#include <optional>
#include <string>

#include <doctest/doctest.h>

namespace kiln::test {

// nullopt when the machine has what a case needs, else why it does not.
using Precondition = std::optional<std::string> (*)();

// A doctest decorator: the case runs only where `missing` returns nullopt.
class skip_if {
 public:
  explicit skip_if(Precondition missing) : missing_(missing) {}
  void fill(doctest::detail::TestCase &state) const;
  void fill(doctest::detail::TestSuite &state) const;  // refused: preconditions belong to cases

 private:
  Precondition missing_;
};

// For main, before context.run(): decides the preconditions of the cases argv selects (its
// test-suite, test-case and source-file filters), excludes those missing one from `context`, and reports each.
void apply_preconditions(doctest::Context &context, int argc, const char *const *argv);

// "SKIPPED <what>: <why>" on stdout and in $KILN_TEST_SKIP_FILE (when set).
void report_skip(const std::string &what, const std::string &why);

}  // namespace kiln::test
