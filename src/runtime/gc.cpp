// Runtime::gc (kiln/gc.hpp) and the size and age words kiln gc takes.
#include <chrono>
#include <cctype>

#include <kiln/errors.hpp>
#include <kiln/gc.hpp>
#include <kiln/runtime.hpp>

#include "runtime/state.hpp"
#include "store/maintenance/gc.hpp"
#include "store/unwritable.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

// "<digits><unit>": the number and the unit's letter (0 when none).
std::pair<std::uint64_t, char> number_and_unit(const std::string &text, const char *what, const char *example) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) ++digits;
  const bool one_unit = text.size() == digits || text.size() == digits + 1;
  if (digits == 0 || digits > 15 || !one_unit) {
    throw UsageError(std::string(what) + " \"" + text + "\" is not a number with at most one unit letter (e.g. " +
                     example + ")");
  }
  return {std::stoull(text.substr(0, digits)), text.size() > digits ? text[digits] : '\0'};
}

}  // namespace

std::uint64_t parse_size(const std::string &text) {
  const auto [number, unit] = number_and_unit(text, "size", "500M, 2G");
  int shift = 0;
  switch (std::toupper(static_cast<unsigned char>(unit))) {
    case 0: case 'B': shift = 0; break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: throw UsageError("size \"" + text + "\": unit must be K, M, G or T (powers of 1024), e.g. 500M");
  }
  return number << shift;
}

std::chrono::seconds parse_age(const std::string &text) {
  const auto [number, unit] = number_and_unit(text, "age", "30d, 12h");
  switch (unit) {
    case 's': return std::chrono::seconds(number);
    case 'm': return std::chrono::minutes(number);
    case 'h': return std::chrono::hours(number);
    case 'd': return std::chrono::hours(24 * number);
    default: throw UsageError("age \"" + text + "\": unit must be s, m, h or d, e.g. 30d");
  }
}

GcReport Runtime::gc(const GcOptions &options) const try {
  const auto start = std::chrono::steady_clock::now();
  GcReport report;
  try {
    report = store::collect_garbage(state_->writable(), options, state_->options.log);
  } catch (const IoError &) {
    store::throw_if_unwritable(state_->writable().location());  // its lock file is its first write
    throw;
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
} catch (...) {
  support::rethrow_typed("collecting garbage in the writable cache");
}

}  // namespace kiln
