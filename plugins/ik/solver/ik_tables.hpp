// kiln IK plugin: the C side of IkSolver<Device> (ik_solver.hpp), shared by both forms: the
// kiln.ik/1 table and its own entry points (dof, joint_info, fk); the forwarding ones are
// plugins/common/kiln_c_trampolines.hpp, kiln.selftest/1 and get_interface the kit's
// SolverInstance, kiln.robotmodel/1 plugins/common/kiln_robotmodel.hpp's (no dynamics: the IK
// chains are generated without).
// Included by ik_solver.hpp.
#pragma once

#include <stdint.h>

#include <cstring>

#include "ik_solver.hpp"
#include "kiln_c_trampolines.hpp"
#include "kiln_interface_structs.hpp"
#include "kiln_robotmodel.hpp"

namespace {

namespace ik_c {

inline uint32_t dof(const kiln_instance *instance) {
  (void)instance;
  return kDof;
}

inline kiln_status joint_info(const kiln_instance *instance, uint32_t index, kiln_ik_joint_info *info) {
  (void)instance;
  return kiln_plugin_common::joint_info<Chain>(index, info, [](kiln_ik_joint_info &full, uint32_t j) {
    for (int k = 0; k < 3; ++k) full.axis[k] = Chain::kAxes[j][k];
  });
}

// kiln.ik/1's fk: kiln.robotmodel/1's (one generated implementation, in double), rounded to float.
inline kiln_status fk(const kiln_instance *instance, const float *q, uint32_t count, float *poses) {
  (void)instance;
  if (count == 0) return KILN_OK;
  if (q == nullptr || poses == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < count; ++i) {
    double qd[kDof], pose[KILN_IK_POSE_SIZE];
    for (int j = 0; j < kDof; ++j) qd[j] = static_cast<double>(q[size_t{i} * kDof + static_cast<size_t>(j)]);
    kiln_plugin_common::robotmodel::pose<Chain>(qd, pose);
    for (int k = 0; k < KILN_IK_POSE_SIZE; ++k) poses[size_t{i} * KILN_IK_POSE_SIZE + k] = static_cast<float>(pose[k]);
  }
  return KILN_OK;
}

}  // namespace ik_c

namespace trampolines = kiln_plugin_common::c_trampolines;

template <class Device>
const kiln_ik_v1 IkSolver<Device>::table = {sizeof(kiln_ik_v1),
                                            &ik_c::dof,
                                            &trampolines::info<IkSolver, kiln_ik_info>,
                                            &ik_c::joint_info,
                                            &ik_c::fk,
                                            &trampolines::solve_async<IkSolver, kiln_ik_problem, kiln_ik_result>,
                                            &trampolines::poll<IkSolver, KILN_IK_IDLE>,
                                            &trampolines::wait<IkSolver>,
                                            &trampolines::solve<IkSolver, kiln_ik_problem, kiln_ik_result>};

}  // namespace
