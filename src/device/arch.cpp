// kiln: arch names -- parsing "sm_90a" / "compute_90" and lists of them, and writing them back.
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/identity.hpp>

#include "support/text.hpp"

namespace kiln {
namespace {

using support::parse_number;
using support::split;
using support::starts_with;
using support::trim;

constexpr const char *kArchForms =
    "expected sm_XY or compute_XY with an optional a or f suffix (e.g. sm_87, sm_90a, sm_100f, "
    "compute_90); CUDA 13 targets sm_75 ... sm_121";

}  // namespace

Arch Arch::parse(std::string_view text) {
  Arch arch;
  std::string_view rest;
  if (starts_with(text, "sm_")) {
    arch.kind = Kind::sass;
    rest = text.substr(3);
  } else if (starts_with(text, "compute_")) {
    arch.kind = Kind::ptx;
    rest = text.substr(8);
  } else {
    throw UsageError("invalid arch " + support::quoted(text) + ": " + kArchForms);
  }
  std::size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  const std::string_view suffix = rest.substr(digits);
  if (digits < 2 || digits > 3 || rest[0] == '0' ||
      !(suffix.empty() || suffix == "a" || suffix == "f")) {
    throw UsageError("invalid arch " + support::quoted(text) + ": " + kArchForms);
  }
  // Major is every digit but the last: sm_87 → 8.7, sm_121 → 12.1.
  arch.major = *parse_number<int>(rest.substr(0, digits - 1));
  arch.minor = rest[digits - 1] - '0';
  arch.suffix = suffix.empty() ? '\0' : suffix[0];
  if (arch.cc() < 75) {
    throw UsageError("arch " + support::quoted(text) + " is compute capability " +
                     std::to_string(arch.major) + "." + std::to_string(arch.minor) +
                     ", which CUDA 13 no longer targets (sm_5x ... sm_72 were removed); CUDA 13 "
                     "targets sm_75 ... sm_121, e.g. sm_87 (Orin), sm_90, sm_110 (Thor)");
  }
  if (arch.suffix == 'a' && arch.cc() < 90) {
    throw UsageError("invalid arch " + support::quoted(text) +
                     ": arch-specific (a) targets exist from sm_90a on; use " +
                     std::string(text.substr(0, text.size() - 1)) + " instead");
  }
  if (arch.suffix == 'f' && arch.cc() < 100) {
    throw UsageError("invalid arch " + support::quoted(text) +
                     ": family (f) targets exist from sm_100f on; use " +
                     std::string(text.substr(0, text.size() - 1)) + " instead");
  }
  return arch;
}

std::vector<Arch> Arch::parse_list(std::string_view comma_list) {
  std::vector<Arch> archs;
  const auto items = split(comma_list, ',');
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto item = trim(items[i]);
    if (item.empty()) {
      throw UsageError("arch list " + support::quoted(comma_list) + ": item " + std::to_string(i + 1) +
                       " is empty; write archs separated by single commas, e.g. "
                       "\"sm_87,sm_90,compute_90\"");
    }
    const Arch arch = parse(item);
    if (std::find(archs.begin(), archs.end(), arch) != archs.end()) {
      throw UsageError("arch list " + support::quoted(comma_list) + ": " + support::quoted(item) +
                       " is listed twice; list each arch once");
    }
    archs.push_back(arch);
  }
  return archs;
}

std::string Arch::to_string() const {
  std::string text = kind == Kind::sass ? "sm_" : "compute_";
  text += std::to_string(major) + std::to_string(minor);
  if (suffix != '\0') text += suffix;
  return text;
}

}  // namespace kiln
