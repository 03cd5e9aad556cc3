// `kiln completion bash`: the bash completion script, written from the CLI's own verbs and
// options, so that it cannot drift from them (the build generates the installed file with it).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace kiln::cli {

std::string bash_completion(const CLI::App &app);

}  // namespace kiln::cli
