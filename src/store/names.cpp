#include "store/names.hpp"

#include <cctype>
#include <string>

#include <kiln/errors.hpp>

namespace kiln::store {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

// Printable form of hostile input for error messages (NUL, control and non-ASCII bytes escaped).
std::string printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text.substr(0, 80)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char *hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > 80) out += "...";
  return out;
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
    throw UsageError(std::string(what) + " \"" + printable(name) + "\" " + why +
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

}  // namespace kiln::store
