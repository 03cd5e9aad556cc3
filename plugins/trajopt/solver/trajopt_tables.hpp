// kiln TrajOpt plugin: the C side of TrajoptSolver<Device> (trajopt_solver.hpp): the
// kiln.trajopt/1 table and its own joint_info; the forwarding entry points are
// plugins/common/kiln_c_trampolines.hpp, kiln.selftest/1 and get_interface the kit's
// SolverInstance, kiln.robotmodel/1 (with dynamics) plugins/common/kiln_robotmodel.hpp's.
// Included by trajopt_solver.hpp.
#pragma once

#include <stdint.h>

#include <cstring>

#include "kiln_c_trampolines.hpp"
#include "kiln_interface_structs.hpp"
#include "kiln_robotmodel.hpp"
#include "trajopt_solver.hpp"

namespace kiln_trajopt {
namespace c_side {

inline kiln_status joint_info(const kiln_instance *, uint32_t index, kiln_trajopt_joint_info *info) {
  return kiln_plugin_common::joint_info<Dyn>(index, info, [](kiln_trajopt_joint_info &full, uint32_t j) {
    full.velocity_limit = Dyn::kVelocityLimit[j];
    full.effort_limit = Dyn::kEffortLimit[j];
    full.position_limited = Dyn::kPositionLimited[j] ? 1u : 0u;
  });
}

}  // namespace c_side

namespace trampolines = kiln_plugin_common::c_trampolines;

template <class Device>
const kiln_trajopt_v1 TrajoptSolver<Device>::table = {
    sizeof(kiln_trajopt_v1),
    &trampolines::info<TrajoptSolver, kiln_trajopt_info>,
    &c_side::joint_info,
    &trampolines::solve_async<TrajoptSolver, kiln_trajopt_problem, kiln_trajopt_result>,
    &trampolines::poll<TrajoptSolver, KILN_TRAJOPT_IDLE>,
    &trampolines::wait<TrajoptSolver>,
    &trampolines::solve<TrajoptSolver, kiln_trajopt_problem, kiln_trajopt_result>};

}  // namespace kiln_trajopt
