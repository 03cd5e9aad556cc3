#include "build_session.hpp"

#include <kiln/recipe.hpp>

namespace kiln::cli {

void add_recipe_options(CLI::App &command, BuildArgs &args) {
  // Not CLI::ExistingFile: a missing recipe is "not found" (exit 3, docs/cli.md), said by Recipe::load.
  command.add_option("recipe", args.recipe, "recipe JSON file")->required();
  command.add_flag("--force", args.force, "recompile every unit");
  command.add_option("--jobs", args.jobs, "parallel compiles (default KILN_JOBS or cores, bounded by memory)");
  command.add_option("--arch", args.archs, "override the recipe's archs: sm_90[,sm_87,compute_90]");
  command.add_flag("-q,--quiet", args.quiet, "no progress on stderr (errors and the result still print)");
  command.add_flag("--no-remote", args.no_remote, "neither ask the remote caches nor upload to them");
}

BuildSession::BuildSession(const Flags &flags, const BuildArgs &args) {
  options.force = args.force;
  options.jobs = args.jobs;
  if (!args.archs.empty()) options.archs = Arch::parse_list(args.archs);
  options.cancel = &token;
  options.use_remote = !args.no_remote;
  options.remote_only = args.remote_only;
  progress = std::make_shared<ProgressReporter>(ProgressReporter::mode_for(flags.json, args.quiet));
  options.progress = [reporter = progress](const BuildEvent &event) { reporter->on_event(event); };
}

}  // namespace kiln::cli
