// The longest chains the shipped solvers take. Each solver's static_assert reads them, and so does
// `kiln robot init`, which refuses a longer chain before any compiler runs.
#pragma once

namespace kiln_plugins {

constexpr int kIkMaxJoints = 32;       // IK: one thread per problem keeps a kDof x kDof system in registers
constexpr int kTrajoptMaxJoints = 16;  // TrajOpt: the banded normal matrix holds 3 * kDof entries per row

}  // namespace kiln_plugins
