// kiln TrajOpt plugin: the C side of TrajoptSolver<Device> (trajopt_solver.hpp): the
// kiln.trajopt/1 and kiln.selftest/1 tables, its own joint_info and get_interface;
// the forwarding entry points are plugins/common/kiln_c_trampolines.hpp, kiln.robotmodel/1 (with
// dynamics) plugins/common/kiln_robotmodel.hpp's. Included by trajopt_solver.hpp.
#pragma once

#include <stdint.h>

#include <cstring>

#include "kiln_c_trampolines.hpp"
#include "kiln_robotmodel.hpp"
#include "trajopt_solver.hpp"

namespace kiln_trajopt {
namespace c_side {

inline kiln_status joint_info(const kiln_instance *, uint32_t index, kiln_trajopt_joint_info *info) {
  if (info == nullptr || info->struct_size == 0 || index >= static_cast<uint32_t>(kDof)) return KILN_ERR_INVALID_ARGUMENT;
  kiln_trajopt_joint_info full{};
  full.struct_size = info->struct_size;
  full.type = Dyn::kJointTypes[index];
  full.lower = Dyn::kLower[index];
  full.upper = Dyn::kUpper[index];
  full.velocity_limit = Dyn::kVelocityLimit[index];
  full.effort_limit = Dyn::kEffortLimit[index];
  full.position_limited = Dyn::kPositionLimited[index] ? 1u : 0u;
  full.name_length = static_cast<uint32_t>(std::strlen(Dyn::kJointNames[index]));
  copy_name(full.name, Dyn::kJointNames[index]);
  std::memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
  return KILN_OK;
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
template <class Device>
const kiln_selftest_v1 TrajoptSolver<Device>::selftest_table = {sizeof(kiln_selftest_v1),
                                                                &trampolines::selftest<TrajoptSolver>};

template <class Device>
const void *TrajoptSolver<Device>::get_interface(const char *interface_id) const noexcept {
  if (std::strcmp(interface_id, KILN_TRAJOPT_INTERFACE_ID) == 0) return &table;
  if (std::strcmp(interface_id, KILN_SELFTEST_INTERFACE_ID) == 0) return &selftest_table;
  if (std::strcmp(interface_id, KILN_ROBOTMODEL_INTERFACE_ID) == 0) return &kiln_plugin_common::robotmodel::Model<Fk, Dyn>::table;
  return nullptr;
}

}  // namespace kiln_trajopt
