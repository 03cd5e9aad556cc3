#include "builder/generator_checks.hpp"

#include <string>

#include <kiln/cancel.hpp>
#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>

#include "builder/backends/nvcc.hpp"
#include "builder/process.hpp"
#include "support/words.hpp"

namespace kiln::builder {

namespace {

// The tool's message without the trailing newlines; its exit status when it printed nothing.
std::string refusal_text(const ProcessResult &run) {
  std::string text = run.output;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (!text.empty()) return text;
  return run.signal != 0 ? "killed by signal " + std::to_string(run.signal) : "exit code " + std::to_string(run.exit_code);
}

}  // namespace

void check_generators(const Recipe &recipe, const CancelToken *cancel) {
  for (const auto &generator : recipe.generators) {
    if (generator.check.empty()) continue;
    ProcessSpec spec;
    spec.argv = substitute(generator.check, {{"{tool}", generator.tool}});
    spec.cwd = recipe.base_dir;
    spec.cancel = cancel;
    const ProcessResult run = run_process(spec);
    if (run.cancelled) {
      throw Error(ErrorKind::other, "check of " + recipe.consumer + "/" + recipe.name + " cancelled; nothing was built");
    }
    if (run.ok()) continue;
    throw UsageError("recipe " + recipe.file + " (" + recipe.consumer + "/" + recipe.name + "): generator " + generator.name +
                     " refuses it: " + refusal_text(run) + "\n(its check: " + support::join_words(spec.argv) +
                     "); fix the recipe");
  }
}

}  // namespace kiln::builder
