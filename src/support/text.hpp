// Small string helpers for parsing and messages.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace kiln::support {

inline bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

inline bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// "a<separator>b<separator>c".
inline std::string joined(const std::vector<std::string> &items, const char *separator) {
  std::string text;
  for (const auto &item : items) {
    if (!text.empty()) text += separator;
    text += item;
  }
  return text;
}

inline std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

// The items between separators; "" gives one empty item.
inline std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> items;
  for (;;) {
    const auto at = text.find(separator);
    items.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return items;
    text.remove_prefix(at + 1);
  }
}

// Whole-text unsigned integer; nullopt on anything else (sign, spaces, overflow).
template <class T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  if (text.empty()) return std::nullopt;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Hostile input made fit for a message: control, NUL and non-ASCII bytes as \xNN, cut after
// `max` bytes ("...").
inline std::string printable(std::string_view text, std::size_t max = 80) {
  static const char *hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

// "text", naming an input in a message.
inline std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

}  // namespace kiln::support
