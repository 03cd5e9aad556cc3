// kiln plugins: "kiln.robotmodel/1" (abi/kiln/ext/robotmodel.h) over the generated chain headers, shared
// by every plugin generated from a URDF. Fk is the generated kiln_fk::Chain (description and forward
// kinematics), Dyn the generated kiln_rnea::Chain or NoDynamics (rnea then answers
// KILN_ERR_UNSUPPORTED). The model is the generated code the solvers use, instantiated in double;
// it is a property of the build, not of an instance, so no call reads instance state.
//
//   kiln_plugin_common::robotmodel::Model<Fk, Dyn>::table   the interface's table
//   kiln_plugin_common::robotmodel::pose<Fk>(q, pose)       one tip pose (kiln.ik/1's fk rounds it)
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "kiln/ext/robotmodel.h"
#include "kiln/plugin.hpp"
#include "kiln_rotation.hpp"

namespace kiln_plugin_common {
namespace robotmodel {

// Dyn for a plugin generated without dynamics.
struct NoDynamics {};

// The tip pose (x y z qw qx qy qz) at the joint vector q (Fk::kDof values), in double.
template <class Fk>
void pose(const double *q, double *out) {
  double p[3], R[9];
  Fk::template fk<double>(q, p, R);
  out[0] = p[0], out[1] = p[1], out[2] = p[2];
  matrix_to_quaternion(R, out[3], out[4], out[5], out[6]);
}

// A NUL-terminated copy truncated to the ABI's name capacity.
inline void copy_model_name(char (&destination)[KILN_ROBOTMODEL_NAME_CAPACITY], const char *source) {
  std::snprintf(destination, sizeof destination, "%s", source);
}

// Writes full into *out up to out->struct_size (the caller's version of the struct).
template <class Struct>
void write_up_to_size(Struct *out, const Struct &full) {
  std::memcpy(out, &full, out->struct_size < sizeof full ? out->struct_size : sizeof full);
}

// The checks every batch call makes before it touches a buffer; false with the message set.
inline bool batch_arguments_ok(const char *function, const kiln_instance *instance, uint32_t count,
                               bool buffers_present, const char *buffers, kiln::plugin::Message &message) {
  if (instance == nullptr) {
    message.format("%s: instance is NULL; pass the instance the interface was asked from", function);
    return false;
  }
  if (count > KILN_ROBOTMODEL_MAX_COUNT) {
    message.format("%s: count = %u exceeds KILN_ROBOTMODEL_MAX_COUNT (%u) configurations per call; split the batch",
                   function, count, KILN_ROBOTMODEL_MAX_COUNT);
    return false;
  }
  if (count > 0 && !buffers_present) {
    message.format("%s: %s must not be NULL when count (%u) > 0", function, buffers, count);
    return false;
  }
  return true;
}

template <class Fk, class Dyn>
constexpr bool same_chain_length() {
  if constexpr (std::is_same_v<Dyn, NoDynamics>) {
    return true;
  } else {
    return Fk::kDof == Dyn::kDof;
  }
}

template <class Fk, class Dyn>
struct Model {
  static_assert(same_chain_length<Fk, Dyn>(), "the FK and dynamics headers must be of one chain");
  static constexpr bool kHasRnea = !std::is_same_v<Dyn, NoDynamics>;

  static uint32_t dof(const kiln_instance *instance) {
    return instance == nullptr ? 0u : static_cast<uint32_t>(Fk::kDof);
  }

  static kiln_status chain(const kiln_instance *instance, kiln_robotmodel_chain_info *info, char *message,
                           size_t message_size) {
    kiln::plugin::Message text(message, message_size);
    if (instance == nullptr || info == nullptr || info->struct_size == 0) {
      text.set("chain: instance and info must not be NULL and info->struct_size must be "
               "sizeof(kiln_robotmodel_chain_info)");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    kiln_robotmodel_chain_info full{};
    full.struct_size = info->struct_size;
    full.dof = static_cast<uint32_t>(Fk::kDof);
    full.has_rnea = kHasRnea ? 1u : 0u;
    if constexpr (kHasRnea) {
      for (int k = 0; k < 3; ++k) full.gravity[k] = Dyn::kGravity[k];
    }
    for (int k = 0; k < 3; ++k) full.tip_position[k] = Fk::kTipOffsetPosition[k];
    for (int k = 0; k < 9; ++k) full.tip_rotation[k] = Fk::kTipOffsetRotation[k];
    copy_model_name(full.robot, Fk::kRobot);
    copy_model_name(full.base_link, Fk::kBaseLink);
    copy_model_name(full.tip_link, Fk::kTipLink);
    copy_model_name(full.source, Fk::kSource);
    copy_model_name(full.model_fingerprint, Fk::kModelFingerprint);
    write_up_to_size(info, full);
    return KILN_OK;
  }

  static kiln_status joint(const kiln_instance *instance, uint32_t index, kiln_robotmodel_joint *joint,
                           char *message, size_t message_size) {
    kiln::plugin::Message text(message, message_size);
    if (instance == nullptr || joint == nullptr || joint->struct_size == 0) {
      text.set("joint: instance and joint must not be NULL and joint->struct_size must be sizeof(kiln_robotmodel_joint)");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (index >= static_cast<uint32_t>(Fk::kDof)) {
      text.format("joint: index %u is not a joint of this chain (0 .. %d)", index, Fk::kDof - 1);
      return KILN_ERR_INVALID_ARGUMENT;
    }
    kiln_robotmodel_joint full{};
    full.struct_size = joint->struct_size;
    full.type = Fk::kJointTypes[index];
    for (int k = 0; k < 3; ++k) full.axis[k] = Fk::kAxes[index][k];
    for (int k = 0; k < 3; ++k) full.origin_position[k] = Fk::kOriginPosition[index][k];
    for (int k = 0; k < 9; ++k) full.origin_rotation[k] = Fk::kOriginRotation[index][k];
    full.lower = Fk::kLower[index];
    full.upper = Fk::kUpper[index];
    full.velocity_limit = Fk::kVelocityLimit[index];
    full.effort_limit = Fk::kEffortLimit[index];
    full.position_limited = Fk::kJointTypes[index] == KILN_ROBOTMODEL_JOINT_CONTINUOUS ? 0u : 1u;
    full.name_length = static_cast<uint32_t>(std::strlen(Fk::kJointNames[index]));
    copy_model_name(full.name, Fk::kJointNames[index]);
    write_up_to_size(joint, full);
    return KILN_OK;
  }

  static kiln_status fk(const kiln_instance *instance, const double *q, uint32_t count, double *poses, char *message,
                        size_t message_size) {
    kiln::plugin::Message text(message, message_size);
    if (!batch_arguments_ok("fk", instance, count, q != nullptr && poses != nullptr, "q and poses", text))
      return KILN_ERR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < count; ++i) pose<Fk>(q + size_t{i} * Fk::kDof, poses + size_t{i} * KILN_ROBOTMODEL_POSE_SIZE);
    return KILN_OK;
  }

  static kiln_status rnea(const kiln_instance *instance, const double *q, const double *qd, const double *qdd,
                          uint32_t count, double *tau, char *message, size_t message_size) {
    kiln::plugin::Message text(message, message_size);
    if (instance == nullptr) {
      text.set("rnea: instance is NULL; pass the instance the interface was asked from");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if constexpr (!kHasRnea) {
      (void)q, (void)qd, (void)qdd, (void)count, (void)tau;
      text.set("rnea: this plugin was generated without dynamics (kiln_robotmodel_chain_info.has_rnea is 0)");
      return KILN_ERR_UNSUPPORTED;
    } else {
      if (!batch_arguments_ok("rnea", instance, count, q != nullptr && qd != nullptr && qdd != nullptr && tau != nullptr,
                              "q, qd, qdd and tau", text))
        return KILN_ERR_INVALID_ARGUMENT;
      for (uint32_t i = 0; i < count; ++i) {
        const size_t at = size_t{i} * Dyn::kDof;
        Dyn::template rnea<double>(q + at, qd + at, qdd + at, tau + at);
      }
      return KILN_OK;
    }
  }

  static const kiln_robotmodel_v1 table;
};

template <class Fk, class Dyn>
const kiln_robotmodel_v1 Model<Fk, Dyn>::table = {sizeof(kiln_robotmodel_v1), &Model::dof, &Model::chain,
                                                  &Model::joint, &Model::fk, &Model::rnea};

}  // namespace robotmodel
}  // namespace kiln_plugin_common
