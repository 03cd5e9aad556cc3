// Small string helpers for messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::support {

inline bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
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

}  // namespace kiln::support
