// kiln TrajOpt plugin: the C side of TrajoptSolver<Device> (trajopt_solver.hpp): the
// kiln.trajopt/1 and kiln.selftest/1 tables, their trampolines (NULL instances refused, the
// self-test's exceptions turned into statuses) and get_interface. Included by trajopt_solver.hpp.
#pragma once

#include <stdint.h>

#include <cstring>
#include <exception>
#include <new>

#include "trajopt_solver.hpp"

namespace kiln_trajopt {
namespace c_side {

template <class S>
S &self(kiln_instance *instance) {
  return kiln::plugin::Instance::from<S>(instance);
}

template <class S>
kiln_status info(const kiln_instance *instance, kiln_trajopt_info *info) {
  if (instance == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  return kiln::plugin::Instance::from<S>(instance).info(info);
}

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

template <class S>
kiln_status solve_async(kiln_instance *instance, const kiln_trajopt_problem *problem, const kiln_trajopt_result *result,
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
  return instance == nullptr ? KILN_TRAJOPT_IDLE : self<S>(instance).poll();
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
kiln_status solve(kiln_instance *instance, const kiln_trajopt_problem *problem, const kiln_trajopt_result *result,
                  char *message, size_t message_size) {
  const kiln_status status = solve_async<S>(instance, problem, result, message, message_size);
  return status != KILN_OK ? status : wait<S>(instance, message, message_size);
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

}  // namespace c_side

template <class Device>
const kiln_trajopt_v1 TrajoptSolver<Device>::table = {
    sizeof(kiln_trajopt_v1),           &c_side::info<TrajoptSolver>,  &c_side::joint_info,
    &c_side::solve_async<TrajoptSolver>, &c_side::poll<TrajoptSolver>, &c_side::wait<TrajoptSolver>,
    &c_side::solve<TrajoptSolver>};
template <class Device>
const kiln_selftest_v1 TrajoptSolver<Device>::selftest_table = {sizeof(kiln_selftest_v1), &c_side::selftest<TrajoptSolver>};

template <class Device>
const void *TrajoptSolver<Device>::get_interface(const char *interface_id) const noexcept {
  if (std::strcmp(interface_id, KILN_TRAJOPT_INTERFACE_ID) == 0) return &table;
  if (std::strcmp(interface_id, KILN_SELFTEST_INTERFACE_ID) == 0) return &selftest_table;
  return nullptr;
}

}  // namespace kiln_trajopt
