#include "store/names.hpp"

#include <cctype>
#include <string>

#include <kiln/errors.hpp>

#include "support/text.hpp"

namespace kiln::store {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}


const char *violation(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxNameLength) return "is longer than 64 characters";
  for (char c : name) {
    if (c == '\0') return "contains a NUL byte";
    if (c == '/') return "contains '/'";
    if (static_cast<unsigned char>(c) >= 0x80) return "contains non-ASCII characters";
    if (!is_name_char(c)) return "contains a character other than letters, digits, '.', '_' and '-'";
  }
  if (name.find("..") != std::string_view::npos) return "contains \"..\"";
  if (!(std::isalnum(static_cast<unsigned char>(name.front())))) return "does not start with a letter or digit";
  // "hjcd-ik." reads as "hjcd-ik" to people and to tools that trim dots, and is a hidden-file
  // or extension separator to others: one character must not make two names look alike.
  if (name.back() == '.') return "ends with '.'";
  return nullptr;
}

}  // namespace

bool is_valid_name(std::string_view name) noexcept { return violation(name) == nullptr; }

void validate_name(std::string_view what, std::string_view name) {
  if (const char *why = violation(name)) {
    throw UsageError(std::string(what) + " \"" + support::printable(name) + "\" " + why +
                     ": use 1-64 characters of letters, digits, '.', '_' and '-', starting with a letter or "
                     "digit and not ending with '.' (e.g. \"hjcd-ik\")");
  }
}

bool is_valid_key(std::string_view key) noexcept {
  if (key.size() != 32) return false;
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::optional<PackedKey> pack_key(std::string_view key) noexcept {
  if (!is_valid_key(key)) return std::nullopt;
  const auto nibble = [](char c) { return static_cast<std::uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
  PackedKey packed{};
  for (std::size_t i = 0; i < packed.size(); ++i) {
    packed[i] = static_cast<std::uint8_t>(nibble(key[2 * i]) << 4 | nibble(key[2 * i + 1]));
  }
  return packed;
}

std::string unpack_key(const PackedKey &key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(32, '0');
  for (std::size_t i = 0; i < key.size(); ++i) {
    text[2 * i] = kDigits[key[i] >> 4];
    text[2 * i + 1] = kDigits[key[i] & 0xf];
  }
  return text;
}

}  // namespace kiln::store
