// kiln internal: a recipe's generator checks (a step's "check" command), run by plan and by
// build before anything is built, so that a recipe its generator would refuse is refused at
// plan time, with the generator's own reason, before any compiler runs or the store is touched.
#pragma once

#include <kiln/cancel.hpp>
#include <kiln/recipe.hpp>

namespace kiln::builder {

// Runs the check of every generator step that has one, in order, in the recipe's directory.
// Throws UsageError naming the recipe, the step and the tool's message for the first refusal
// (the recipe is at fault, as `kiln robot init` reports the same refusal), IoError when a
// check's program cannot be started, Error "cancelled" when cancel is (the check is killed).
void check_generators(const Recipe &recipe, const CancelToken *cancel);

}  // namespace kiln::builder
