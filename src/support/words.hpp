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

}  // namespace kiln::support
