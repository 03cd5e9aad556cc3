// What build and ensure share: the recipe options, progress on a terminal, Ctrl-C that stops
// the compilers.
#pragma once

#include <memory>
#include <string>

#include <kiln/cancel.hpp>
#include <kiln/recipe.hpp>

#include "common.hpp"
#include "progress.hpp"

namespace kiln::cli {

struct BuildArgs {
  std::string recipe;
  bool plan = false;  // build only
  bool force = false;
  bool quiet = false;
  unsigned jobs = 0;
  std::string archs;
  bool no_remote = false;
  bool remote_only = false;  // kiln remote pull
};

// recipe, --force, --jobs, --arch, --quiet, --no-remote.
void add_recipe_options(CLI::App &command, BuildArgs &args);

// BuildOptions from the arguments, with progress on stderr (progress.hpp); while alive, SIGINT
// and SIGTERM cancel the build. finish() prints the summary of a build that ran.
struct BuildSession {
  CancelToken token;
  CancelOnSignals signals{token};
  std::shared_ptr<ProgressReporter> progress;
  BuildOptions options;

  BuildSession(const Flags &flags, const BuildArgs &args);
  void finish() { progress->finish(); }
};

// kiln build (and kiln remote pull, with args.remote_only): --plan, or the build and its result.
int run_build(const Flags &flags, const BuildArgs &args);

}  // namespace kiln::cli
