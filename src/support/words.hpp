// A command line as one string, for build logs and keys.
#pragma once

#include <string>
#include <vector>

namespace kiln::support {

inline std::string join_words(const std::vector<std::string> &words) {
  std::string text;
  for (const auto &word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

// A command line as a POSIX shell reads it back: words with anything but [A-Za-z0-9_./=:,+@%-]
// single-quoted. For logs a person (or a benchmark) may replay; keys use join_words.
inline std::string shell_words(const std::vector<std::string> &words) {
  std::string text;
  for (const auto &word : words) {
    const bool plain = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                               "0123456789_./=:,+@%-") == std::string::npos;
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text += (text.empty() ? "" : " ") + (plain ? word : quoted + "'");
  }
  return text;
}

}  // namespace kiln::support
