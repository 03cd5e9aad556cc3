// kiln build: build a recipe on miss (exactly once across processes); --plan says what a build
// would do, and why an entry of the recipe's name no longer serves (stale reasons).
#include <memory>

#include <kiln/json.hpp>
#include <kiln/recipe.hpp>

#include "build_session.hpp"
#include "report_json.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

using nlohmann::json;

// Who vouched for a fetched entry: said on every fetch, loudest when nobody did.
std::string remote_signature(const BuildResult &result) {
  return result.remote_signed_by.empty() ? " (signature NOT checked: no trusted keys configured)"
                                         : " (signed by " + result.remote_signed_by + ")";
}

// "built consumer/name in 1.23 s", the keys, the entry and each remote's upload.
std::string build_text(const BuildResult &result) {
  std::string text = std::string(kiln::to_string(result.outcome)) + " " + result.consumer + "/" + result.name + " in " +
                     fixed(result.seconds, 2) + " s" + (result.remote.empty() ? "" : " from " + result.remote + remote_signature(result)) +
                     (result.layer.empty() ? "" : " from the read-only layer " + result.layer) +
                     "\n  content key " + result.content_key + "\n  input key   " + result.input_key + "\n  " +
                     result.entry_dir + "\n";
  for (const auto &upload : result.uploads) {
    text += "  remote " + upload.remote + ": " + upload.status + (upload.replaced.empty() ? "" : " " + upload.replaced) + "\n";
  }
  return text;
}

std::string plan_text(const Recipe &recipe, const BuildPlan &plan) {
  std::string text = recipe.consumer + "/" + recipe.name + ": " + plan.state + "\n  input key   " + plan.input_key +
                     "\n  content key " + (plan.content_key ? *plan.content_key : std::string("(unknown until built)")) +
                     "\n  source      " + plan.source + "\n  archs       " + arch_list(plan.archs) +
                     (plan.backend == "nvrtc" ? "\n  jit         " + plan.jit_toolchain + "\n"
                                              : "\n  nvcc        " + plan.nvcc + " (" + plan.nvcc_version + ")\n") +
                     (plan.backend == "cmake" ? "  cmake       " + plan.cmake + " (" + plan.cmake_version + ")\n" : "");
  for (const auto &reason : plan.stale_reasons) text += "  stale: " + reason.to_string() + "\n";
  if (plan.units > 0 && plan.state != "cached") {
    text += "  units       " + std::to_string(plan.units) + " (" + std::to_string(plan.units_cached) +
            " from the object cache, " + std::to_string(plan.units - plan.units_cached) + " to compile)\n";
  }
  for (const auto &step : plan.steps) text += "  would " + step + "\n";
  return text;
}

}  // namespace

int run_build(const Flags &flags, const BuildArgs &args) {
  Runtime runtime = make_runtime(flags);
  const Recipe recipe = Recipe::load(args.recipe);
  BuildSession session(flags, args);
  if (args.plan) {
    const BuildPlan plan = runtime.plan(recipe, session.options);
    emit(flags, kiln::to_json(plan), plan_text(recipe, plan));
    return 0;
  }
  const BuildResult result = runtime.build(recipe, session.options);
  session.finish();
  emit(flags, kiln::to_json(result), build_text(result));
  return 0;
}

Verb add_build(CLI::App &app, const Flags &flags) {
  auto args = std::make_shared<BuildArgs>();
  CLI::App *command = app.add_subcommand("build", "build a recipe on miss (exactly once across processes)");
  add_recipe_options(*command, *args);
  command->add_flag("--plan", args->plan, "report what a build would do, without side effects");
  return {command, [&flags, args] { return run_build(flags, *args); }};
}

}  // namespace kiln::cli
