// "Did you mean": the nearest known word to a mistyped verb or option, as git and cargo offer.
// Pure string logic (no CLI11), so that the unit tests compile it on its own.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cli {

// Optimal string alignment distance (Damerau-Levenshtein where no substring is edited twice):
// insertions, deletions, substitutions and transpositions of adjacent characters, each 1.
std::size_t edit_distance(const std::string &a, const std::string &b);

// The candidate nearest to `word`, if it is close enough to be what was meant: within a third of
// the word's length without leading dashes (at least 1, at most 3 edits), else one the word (two
// characters or more) is a prefix of. Ties go to the
// first in `candidates`. Nothing when nothing is close.
std::optional<std::string> nearest(const std::string &word, const std::vector<std::string> &candidates);

}  // namespace kiln::cli
