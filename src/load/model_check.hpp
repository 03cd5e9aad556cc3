// kiln internal: a host's required robot model against the models a plugin entry records, before
// any of the plugin's code is loaded.
#pragma once

#include <kiln/runtime.hpp>

namespace kiln::load {

// Nothing when `required.fingerprint` is empty or among the entry's recorded models. Otherwise
// IncompatibleError (field "robot_model") naming both fingerprints and, when `required.text` is
// given, the first line where the plugin's model text (its file's .kiln.model section) and the
// required one differ -- the link or joint that changed. UsageError for a fingerprint that is not
// "xxh128:" and 32 hex digits.
void check_required_model(const Resolution &resolution, const ModelRequirement &required);

}  // namespace kiln::load
