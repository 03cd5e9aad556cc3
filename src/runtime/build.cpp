// Runtime's build-on-miss verbs: plan, build, ensure.
#include <kiln/kernels.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include <chrono>

#include "builder/abi_headers.hpp"
#include "builder/builder.hpp"
#include "runtime/state.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

builder::BuilderContext context_for(const Runtime::State &state, const Runtime &runtime, const LogCallback &log) {
  builder::BuilderContext context;
  context.storage = state.storage.get();
  context.toolchain_cache = state.writable().root() / "toolchain.json";
  const builder::AbiHeaders abi = builder::abi_headers_for(state.writable().root());
  context.abi_dir = abi.dir;
  context.abi_embedded = abi.embedded;
  context.log = log;
  context.elsewhere = [remotes = state.remotes.get()]() -> std::shared_ptr<const store::EntrySource> {
    return remotes->get();
  };
  (void)runtime;
  return context;
}

}  // namespace

BuildPlan Runtime::plan(const Recipe &recipe) const { return plan(recipe, BuildOptions{}); }
BuildResult Runtime::build(const Recipe &recipe) { return build(recipe, BuildOptions{}); }
Module Runtime::ensure(const Recipe &recipe) { return ensure(recipe, BuildOptions{}, LoadOptions{}); }

BuildPlan Runtime::plan(const Recipe &recipe, const BuildOptions &options) const try {
  builder::BuilderContext context = context_for(*state_, *this, state_->options.log);
  if (options.archs.empty()) context.devices = state_->check_devices();
  return builder::plan_build(recipe, options, context);
} catch (...) {
  support::rethrow_typed("planning the build of " + recipe.consumer + "/" + recipe.name + " (recipe " + recipe.file + ")");
}

BuildResult Runtime::build(const Recipe &recipe, const BuildOptions &options) try {
  builder::BuilderContext context = context_for(*state_, *this, state_->options.log);
  bool native = options.archs.empty();
  if (native) {
    native = false;
    for (const auto &arch : recipe.archs) native = native || arch == "native";
  }
  if (native) context.devices = state_->check_devices();  // cuInit only when "native" needs it
  return builder::run_build(recipe, options, context);
} catch (...) {
  support::rethrow_typed("building " + recipe.consumer + "/" + recipe.name + " (recipe " + recipe.file + ")");
}

Module Runtime::ensure(const Recipe &recipe, const BuildOptions &build_options, const LoadOptions &load_options) try {
  if (!recipe.builds_plugin()) {
    throw UsageError("recipe " + recipe.file + " builds device images (backend " + recipe.backend +
                     "), not a plugin: use Runtime::ensure_kernels");
  }
  const auto start = std::chrono::steady_clock::now();
  bool prepared = false;
  Resolution resolution = built_or_prepared(recipe, build_options, &prepared);
  const double resolve_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return load_resolved(std::move(resolution), load_options, prepared ? 0 : resolve_ms);
} catch (...) {
  support::rethrow_typed("ensuring " + recipe.consumer + "/" + recipe.name + " (recipe " + recipe.file + ")");
}

Resolution Runtime::built_or_prepared(const Recipe &recipe, const BuildOptions &options, bool *prepared) {
  *prepared = false;
  BuildResult built;
  try {
    built = build(recipe, options);
  } catch (const ToolchainMissingError &missing_toolchain) {
    // A robot without a toolchain still loads what was prepared for it. Only then: a build
    // that failed any other way (a compiler that wrote nothing, a source gone) is an error to
    // see, never hidden behind an older artifact.
    Resolution found;
    try {
      found = resolve(recipe.consumer, recipe.name);
    } catch (const NotFoundError &) {
      throw ToolchainMissingError(std::string(missing_toolchain.what()) + "; and no prepared artifact " +
                                  recipe.consumer + "/" + recipe.name + " exists in the stores to load instead");
    }
    log(LogLevel::warning, std::string("no toolchain (") + missing_toolchain.what() + "): loading the prepared " +
                               recipe.consumer + "/" + recipe.name + " (" + found.content_key +
                               ") without checking it against the recipe");
    *prepared = true;
    return found;
  }
  // Exactly what was built: the writable store's entry, even where a read-only layer holds an
  // artifact of the same name -- unless that layer's entry is what served the build.
  Resolution resolution = built.layer.empty() ? state_->storage->resolve_writable(recipe.consumer, recipe.name)
                                              : *state_->storage->resolve(recipe.consumer, recipe.name);
  if (resolution.content_key != built.content_key) {
    throw IntegrityError("after building " + recipe.consumer + "/" + recipe.name + " as " + built.content_key +
                         " the manifest names " + resolution.content_key + ": another writer replaced it meanwhile; retry");
  }
  return resolution;
}

}  // namespace kiln
