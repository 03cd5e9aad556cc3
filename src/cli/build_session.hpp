// What build and ensure share: the recipe options, progress on a terminal, Ctrl-C that stops
// the compilers.
#pragma once

#include <string>

#include <kiln/cancel.hpp>

#include "common.hpp"

namespace kiln::cli {

struct BuildArgs {
  std::string recipe;
  bool plan = false;  // build only
  bool force = false;
  unsigned jobs = 0;
  std::string archs;
};

// recipe, --force, --jobs, --arch.
void add_recipe_options(CLI::App &command, BuildArgs &args);

// BuildOptions from the arguments: progress lines on stderr when it is a terminal (and not
// --json); while alive, SIGINT and SIGTERM cancel the build.
struct BuildSession {
  CancelToken token;
  CancelOnSignals signals{token};
  BuildOptions options;

  BuildSession(const Flags &flags, const BuildArgs &args);
};

}  // namespace kiln::cli
