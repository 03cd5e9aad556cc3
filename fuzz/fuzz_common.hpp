// What every kiln fuzz target shares: the input as a string, the rule that a typed kiln refusal
// (kiln::Error) is the expected answer to bad bytes, and how a broken invariant is reported.
//
// Any other exception escapes LLVMFuzzerTestOneInput; libFuzzer then reports it as a crash
// (std::terminate -> abort) and keeps the input, as it does for sanitizer reports, leaks,
// timeouts and out-of-memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <kiln/errors.hpp>

namespace kiln::fuzz {

inline std::string text_of(const std::uint8_t *data, std::size_t size) {
  return std::string(reinterpret_cast<const char *>(data), size);
}

// Runs one input: returns normally when `body` accepts it or refuses it with a kiln::Error.
template <class Body>
int run(Body &&body) {
  try {
    body();
  } catch (const kiln::Error &) {
    // A typed refusal: the outcome kiln promises for bad input.
  }
  return 0;
}

// An invariant that does not hold (e.g. what kiln wrote, it cannot read back): a finding.
[[noreturn]] inline void broken(const char *what, const std::string &detail) {
  std::fprintf(stderr, "kiln fuzz: invariant broken: %s\n%s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace kiln::fuzz
