// `kiln man`: the kiln(1) man page in roff, written from the CLI's own verbs, options and
// reference tables (help2man's job, without needing help2man); the build installs its output.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kiln::cli {

std::string man_page(const CLI::App &app);

}  // namespace kiln::cli
