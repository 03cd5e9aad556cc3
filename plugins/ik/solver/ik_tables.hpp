// kiln IK plugin: the C side of IkSolver<Device> (ik_solver.hpp), shared by both forms: the
// kiln.ik/1 and kiln.selftest/1 tables and their trampolines (NULL instances refused, the
// self-test's exceptions turned into statuses), and get_interface. Included by ik_solver.hpp.
#pragma once

#include <stdint.h>

#include <cstring>
#include <exception>
#include <new>

#include "ik_solver.hpp"

namespace {

namespace ik_c {

template <class S>
const S &self(const kiln_instance *instance) {
  return kiln::plugin::Instance::from<S>(instance);
}
template <class S>
S &self(kiln_instance *instance) {
  return kiln::plugin::Instance::from<S>(instance);
}

inline uint32_t dof(const kiln_instance *instance) {
  (void)instance;
  return kDof;
}

template <class S>
kiln_status info(const kiln_instance *instance, kiln_ik_info *info) {
  if (instance == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  return self<S>(instance).info(info);
}

inline kiln_status joint_info(const kiln_instance *instance, uint32_t index, kiln_ik_joint_info *info) {
  (void)instance;
  if (info == nullptr || info->struct_size == 0 || index >= static_cast<uint32_t>(kDof)) return KILN_ERR_INVALID_ARGUMENT;
  kiln_ik_joint_info full{};
  full.struct_size = info->struct_size;
  full.type = Chain::kJointTypes[index];
  full.lower = Chain::kLower[index];
  full.upper = Chain::kUpper[index];
  for (int k = 0; k < 3; ++k) full.axis[k] = Chain::kAxes[index][k];
  full.name_length = static_cast<uint32_t>(std::strlen(Chain::kJointNames[index]));
  copy_name(full.name, Chain::kJointNames[index]);
  std::memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
  return KILN_OK;
}

inline kiln_status fk(const kiln_instance *instance, const float *q, uint32_t count, float *poses) {
  (void)instance;
  if (count == 0) return KILN_OK;
  if (q == nullptr || poses == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < count; ++i) {
    double qd[kDof], p[3], R[9];
    for (int j = 0; j < kDof; ++j) qd[j] = static_cast<double>(q[size_t{i} * kDof + static_cast<size_t>(j)]);
    Chain::fk<double>(qd, p, R);
    double w, x, y, z;
    kiln_ik::matrix_to_quaternion(R, w, x, y, z);
    float *out = poses + size_t{i} * KILN_IK_POSE_SIZE;
    const double values[KILN_IK_POSE_SIZE] = {p[0], p[1], p[2], w, x, y, z};
    for (int k = 0; k < KILN_IK_POSE_SIZE; ++k) out[k] = static_cast<float>(values[k]);
  }
  return KILN_OK;
}

template <class S>
kiln_status solve_async(kiln_instance *instance, const kiln_ik_problem *problem, const kiln_ik_result *result,
                        char *message, size_t message_size) {
  kiln::plugin::Message text(message, message_size);
  if (instance == nullptr) {
    text.set("solve: instance is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  return self<S>(instance).solve_async(problem, result, text);
}

template <class S>
int32_t poll(kiln_instance *instance) {
  return instance == nullptr ? KILN_IK_IDLE : self<S>(instance).poll();
}

template <class S>
kiln_status wait(kiln_instance *instance, char *message, size_t message_size) {
  kiln::plugin::Message text(message, message_size);
  if (instance == nullptr) {
    text.set("wait: instance is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  return self<S>(instance).wait(text);
}

template <class S>
kiln_status solve(kiln_instance *instance, const kiln_ik_problem *problem, const kiln_ik_result *result, char *message,
                  size_t message_size) {
  const kiln_status status = solve_async<S>(instance, problem, result, message, message_size);
  if (status != KILN_OK) return status;
  return wait<S>(instance, message, message_size);
}

template <class S>
kiln_status selftest(kiln_instance *instance, char *message, size_t message_size) noexcept {
  kiln::plugin::Message text(message, message_size);
  if (instance == nullptr) {
    text.set("selftest: instance is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  try {
    return self<S>(instance).selftest(text);
  } catch (const std::bad_alloc &) {
    text.set("selftest: out of host memory");
    return KILN_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &error) {
    text.format("selftest: %s", error.what());
    return KILN_ERR_INTERNAL;
  } catch (...) {
    text.set("selftest: unknown exception");
    return KILN_ERR_INTERNAL;
  }
}

}  // namespace ik_c

template <class Device>
const kiln_ik_v1 IkSolver<Device>::table = {
    sizeof(kiln_ik_v1),          &ik_c::dof,        &ik_c::info<IkSolver>,  &ik_c::joint_info,
    &ik_c::fk,                   &ik_c::solve_async<IkSolver>, &ik_c::poll<IkSolver>, &ik_c::wait<IkSolver>,
    &ik_c::solve<IkSolver>};
template <class Device>
const kiln_selftest_v1 IkSolver<Device>::selftest_table = {sizeof(kiln_selftest_v1), &ik_c::selftest<IkSolver>};

template <class Device>
const void *IkSolver<Device>::get_interface(const char *interface_id) const noexcept {
  if (std::strcmp(interface_id, KILN_IK_INTERFACE_ID) == 0) return &table;
  if (std::strcmp(interface_id, KILN_SELFTEST_INTERFACE_ID) == 0) return &selftest_table;
  return nullptr;
}

}  // namespace
