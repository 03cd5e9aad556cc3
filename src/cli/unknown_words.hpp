// A mistyped verb or option, named with the nearest known one ("did you mean"): CLI11 says only
// "A subcommand is required" or "The following arguments were not expected".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kiln::cli {

// After a failed parse of argv by `app`: the first verb or option no command knows, said with
// the nearest known one, e.g. "unknown verb 'lss'; did you mean 'ls'?". Nothing when every word
// is known (the parse failed for another reason, which CLI11's message says).
std::optional<std::string> unknown_word(const CLI::App &app, int argc, const char *const *argv);

// Verbs and options of a command as a user types them: the visible subcommands' names,
// "--long" and "-s" names.
std::vector<std::string> verb_names(const CLI::App &command);
std::vector<std::string> option_names(const CLI::App &command);

}  // namespace kiln::cli
