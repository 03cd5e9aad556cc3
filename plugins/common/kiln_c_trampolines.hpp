// kiln plugins: the C entry points of a solver interface (kiln.ik/1, kiln.trajopt/1) and of
// kiln.selftest/1 that only forward to the C++ instance, shared by kiln.ik and kiln.trajopt: NULL
// instances refused, messages wrapped, the self-test's exceptions turned into statuses. S is the
// plugin's instance class (info, solve_async, poll, wait, selftest); each plugin builds its own
// tables from these and its own entry points (dof, joint_info, fk).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <exception>
#include <new>

#include "kiln/plugin.hpp"

namespace kiln_plugin_common {
namespace c_trampolines {

template <class S>
const S &self(const kiln_instance *instance) {
  return kiln::plugin::Instance::from<S>(instance);
}
template <class S>
S &self(kiln_instance *instance) {
  return kiln::plugin::Instance::from<S>(instance);
}

template <class S, class Info>
kiln_status info(const kiln_instance *instance, Info *info) {
  if (instance == nullptr) return KILN_ERR_INVALID_ARGUMENT;
  return self<S>(instance).info(info);
}

template <class S, class Problem, class Result>
kiln_status solve_async(kiln_instance *instance, const Problem *problem, const Result *result, char *message,
                        size_t message_size) {
  kiln::plugin::Message text(message, message_size);
  if (instance == nullptr) {
    text.set("solve: instance is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  return self<S>(instance).solve_async(problem, result, text);
}

// kIdle: the interface's "no solve in flight" (KILN_IK_IDLE, KILN_TRAJOPT_IDLE).
template <class S, int32_t kIdle>
int32_t poll(kiln_instance *instance) {
  return instance == nullptr ? kIdle : self<S>(instance).poll();
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

template <class S, class Problem, class Result>
kiln_status solve(kiln_instance *instance, const Problem *problem, const Result *result, char *message,
                  size_t message_size) {
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

}  // namespace c_trampolines
}  // namespace kiln_plugin_common
