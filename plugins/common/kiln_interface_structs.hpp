// kiln plugins: filling the versioned structs a solver interface hands out (its info, its joint
// info), the same for every solver kind: names copied NUL-terminated, a struct copied out no
// further than the caller's struct_size. Host code, plain C++.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstring>

#include "kiln/plugin.hpp"

namespace kiln_plugin_common {

// A name into a fixed field, truncated to N - 1 characters, the rest NUL.
template <size_t N>
void copy_name(char (&destination)[N], const char *source) noexcept {
  std::strncpy(destination, source, N - 1);
  destination[N - 1] = '\0';
}

// full (filled in completely) into the caller's *out, of out->struct_size bytes at most: a caller
// built against an older, shorter struct gets its prefix.
template <class Struct>
void copy_versioned(Struct *out, const Struct &full) noexcept {
  std::memcpy(out, &full, out->struct_size < sizeof full ? out->struct_size : sizeof full);
}

// joint_info of an interface whose joint struct has type, lower, upper, name_length and name:
// Model's joint `index` (Model: the generated chain, with kDof, kJointTypes, kLower, kUpper,
// kJointNames); add(full, index) writes the interface's own fields.
template <class Model, class JointInfo, class Add>
kiln_status joint_info(uint32_t index, JointInfo *info, Add add) noexcept {
  if (info == nullptr || info->struct_size == 0 || index >= static_cast<uint32_t>(Model::kDof))
    return KILN_ERR_INVALID_ARGUMENT;
  JointInfo full{};
  full.struct_size = info->struct_size;
  full.type = Model::kJointTypes[index];
  full.lower = Model::kLower[index];
  full.upper = Model::kUpper[index];
  add(full, index);
  full.name_length = static_cast<uint32_t>(std::strlen(Model::kJointNames[index]));
  copy_name(full.name, Model::kJointNames[index]);
  copy_versioned(info, full);
  return KILN_OK;
}

}  // namespace kiln_plugin_common
