#include "suggest.hpp"

#include <algorithm>

namespace kiln::cli {

std::size_t edit_distance(const std::string &a, const std::string &b) {
  // Three rows of the dynamic-programming table: the transposition looks two rows back.
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::optional<std::string> nearest(const std::string &word, const std::vector<std::string> &candidates) {
  // Leading dashes of an option are no part of what was typed wrong.
  const std::size_t letters = word.size() - std::min(word.find_first_not_of('-'), word.size());
  if (letters == 0) return std::nullopt;
  const std::size_t allowed = std::min<std::size_t>(3, std::max<std::size_t>(1, letters / 3));
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const auto &candidate : candidates) {
    if (candidate == word) return candidate;
    const std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  if (best || letters < 2) return best;
  for (const auto &candidate : candidates) {
    if (candidate.size() > word.size() && candidate.compare(0, word.size(), word) == 0) return candidate;
  }
  return std::nullopt;
}

}  // namespace kiln::cli
