// kiln ensure: build a recipe if needed, then load what was built (where no toolchain exists:
// the prepared artifact of the recipe's consumer/name).
#include <memory>

#include <kiln/json.hpp>
#include <kiln/kernels.hpp>
#include <kiln/recipe.hpp>

#include "build_session.hpp"
#include "report_json.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

int ensure(const Flags &flags, const BuildArgs &args, int device) {
  Runtime runtime = make_runtime(flags);
  const Recipe recipe = Recipe::load(args.recipe);
  BuildSession session(flags, args);
  if (!recipe.builds_plugin()) {
    KernelLoadReport report;
    const KernelLibrary kernels = runtime.ensure_kernels(recipe, session.options, device, &report);
    session.finish();
    emit(flags, kiln::to_json(report), kernel_load_text("ensured", report));
    return 0;
  }
  LoadOptions load_options;
  load_options.device = device;
  Module module = runtime.ensure(recipe, session.options, load_options);
  session.finish();
  const LoadReport &report = module.report();
  std::string text = "ensured " + recipe.consumer + "/" + recipe.name + " (" + report.resolution.content_key +
                     ")\n  device   " +
                     (report.device ? report.device->name + " " + report.device->arch_name() : std::string("none")) +
                     ": " + (report.compatibility.how.empty() ? std::string("-") : report.compatibility.how) +
                     "\n  interfaces";
  for (const auto &id : report.interfaces) text += " " + id;
  text += "\n";
  emit(flags, kiln::to_json(report), text);
  return 0;
}

}  // namespace

Verb add_ensure(CLI::App &app, const Flags &flags) {
  auto args = std::make_shared<BuildArgs>();
  auto device = std::make_shared<int>(-1);
  CLI::App *command = app.add_subcommand("ensure", "build a recipe if needed, then load what was built");
  add_recipe_options(*command, *args);
  command->add_option("--device", *device, "device index to check against (default: the first)");
  return {command, [&flags, args, device] { return ensure(flags, *args, *device); }};
}

}  // namespace kiln::cli
