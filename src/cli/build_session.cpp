#include "build_session.hpp"

#include <unistd.h>

#include <cstdio>

namespace kiln::cli {

void add_recipe_options(CLI::App &command, BuildArgs &args) {
  command.add_option("recipe", args.recipe, "recipe JSON file")->required()->check(CLI::ExistingFile);
  command.add_flag("--force", args.force, "recompile every unit");
  command.add_option("--jobs", args.jobs, "parallel compiles (default KILN_JOBS or cores, bounded by memory)");
  command.add_option("--arch", args.archs, "override the recipe's archs: sm_90[,sm_87,compute_90]");
}

BuildSession::BuildSession(const Flags &flags, const BuildArgs &args) {
  options.force = args.force;
  options.jobs = args.jobs;
  if (!args.archs.empty()) options.archs = Arch::parse_list(args.archs);
  options.cancel = &token;
  if (!flags.json && ::isatty(STDERR_FILENO)) {
    options.progress = [](const BuildEvent &event) {
      using Kind = BuildEvent::Kind;
      switch (event.kind) {
        case Kind::generator_started: std::fprintf(stderr, "  generate %s ...\n", event.name.c_str()); break;
        case Kind::unit_started: break;
        case Kind::link_started: std::fprintf(stderr, "  link     %s ...\n", event.name.c_str()); break;
        case Kind::generator_finished:
        case Kind::link_finished:
          std::fprintf(stderr, "  done     %s (%.2f s)\n", event.name.c_str(), event.seconds);
          break;
        case Kind::unit_finished:
          std::fprintf(stderr, "  compile  %s %s (%.2f s)\n", event.name.c_str(), event.cached ? "cached" : "done",
                       event.seconds);
          break;
      }
    };
  }
}

}  // namespace kiln::cli
