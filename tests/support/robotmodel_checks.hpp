// kiln tests: checks of a plugin's "kiln.robotmodel/1" (abi/kiln/ext/robotmodel.h) that hold for any
// chain, shared by the IK and TrajOpt tests: fk agrees with the chain's own description (the product
// of the joint origins and motions, composed here with Eigen), and every bad argument is a typed
// status with a message naming it, never a crash.
#pragma once

#include <doctest/doctest.h>

#include <Eigen/Geometry>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <kiln/ext/robotmodel.h>

namespace kiln::test::robotmodel {

inline kiln_robotmodel_chain_info chain_info(const kiln_robotmodel_v1 *api, const kiln_instance *instance) {
  kiln_robotmodel_chain_info info{};
  info.struct_size = sizeof info;
  char message[256] = "";
  REQUIRE_MESSAGE(api->chain(instance, &info, message, sizeof message) == KILN_OK, message);
  return info;
}

inline std::vector<kiln_robotmodel_joint> joints(const kiln_robotmodel_v1 *api, const kiln_instance *instance) {
  std::vector<kiln_robotmodel_joint> out(api->dof(instance));
  char message[256] = "";
  for (uint32_t j = 0; j < out.size(); ++j) {
    out[j].struct_size = sizeof out[j];
    REQUIRE_MESSAGE(api->joint(instance, j, &out[j], message, sizeof message) == KILN_OK, message);
  }
  return out;
}

inline Eigen::Isometry3d transform(const double *position, const double *rotation) {
  Eigen::Isometry3d t = Eigen::Isometry3d::Identity();
  t.linear() = Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(rotation);
  t.translation() = Eigen::Vector3d(position[0], position[1], position[2]);
  return t;
}

// The tip pose at q composed from the description alone: origin_j * motion_j(q_j) ... * tip.
inline Eigen::Isometry3d composed_tip(const kiln_robotmodel_chain_info &chain,
                                      const std::vector<kiln_robotmodel_joint> &joints, const double *q) {
  Eigen::Isometry3d t = Eigen::Isometry3d::Identity();
  for (std::size_t j = 0; j < joints.size(); ++j) {
    const kiln_robotmodel_joint &joint = joints[j];
    t = t * transform(joint.origin_position, joint.origin_rotation);
    const Eigen::Vector3d axis(joint.axis[0], joint.axis[1], joint.axis[2]);
    if (joint.type == KILN_ROBOTMODEL_JOINT_PRISMATIC) {
      t.translate(q[j] * axis);
    } else {
      t.rotate(Eigen::AngleAxisd(q[j], axis));
    }
  }
  return t * transform(chain.tip_position, chain.tip_rotation);
}

// fk of random joint vectors (within the limits, and past them: fk does not clamp) against the
// description; returns the largest position (m) and rotation-entry differences seen.
inline double check_fk_matches_description(const kiln_robotmodel_v1 *api, const kiln_instance *instance,
                                           uint64_t seed, uint32_t count = 200) {
  const kiln_robotmodel_chain_info chain = chain_info(api, instance);
  const std::vector<kiln_robotmodel_joint> js = joints(api, instance);
  const uint32_t dof = chain.dof;
  REQUIRE(js.size() == dof);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.2, 1.2);  // past the limits by a fifth of the range
  std::vector<double> q(size_t{count} * dof), poses(size_t{count} * KILN_ROBOTMODEL_POSE_SIZE);
  for (uint32_t i = 0; i < count; ++i) {
    for (uint32_t j = 0; j < dof; ++j) {
      const double mid = (js[j].lower + js[j].upper) / 2, half = (js[j].upper - js[j].lower) / 2;
      q[size_t{i} * dof + j] = mid + half * u(rng);
    }
  }
  char message[256] = "";
  REQUIRE_MESSAGE(api->fk(instance, q.data(), count, poses.data(), message, sizeof message) == KILN_OK, message);
  double worst = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const double *pose = poses.data() + size_t{i} * KILN_ROBOTMODEL_POSE_SIZE;
    const Eigen::Isometry3d expected = composed_tip(chain, js, q.data() + size_t{i} * dof);
    const Eigen::Quaterniond quat(pose[3], pose[4], pose[5], pose[6]);
    CHECK(pose[3] >= 0.0);                                // w >= 0
    CHECK(std::fabs(quat.norm() - 1.0) < 1e-12);          // a unit quaternion
    worst = std::fmax(worst, (Eigen::Vector3d(pose[0], pose[1], pose[2]) - expected.translation()).cwiseAbs().maxCoeff());
    worst = std::fmax(worst, (quat.toRotationMatrix() - expected.linear()).cwiseAbs().maxCoeff());
  }
  CHECK(worst < 1e-9);  // the generator snaps rotation entries within 1e-9 of 0 or +-1
  return worst;
}

// Every argument a host can get wrong, with what each must answer. has_rnea: the plugin offers rnea.
inline void check_bad_inputs(const kiln_robotmodel_v1 *api, const kiln_instance *instance, bool has_rnea) {
  const uint32_t dof = api->dof(instance);
  REQUIRE(dof > 0);
  CHECK(api->dof(nullptr) == 0);
  char message[256];
  const auto refused = [&](kiln_status status, kiln_status expected, const char *names) {
    CHECK(status == expected);
    CAPTURE(message);
    CHECK(std::strstr(message, names) != nullptr);
  };
  kiln_robotmodel_chain_info info{};
  info.struct_size = sizeof info;
  kiln_robotmodel_joint joint{};
  joint.struct_size = sizeof joint;

  SUBCASE("chain and joint: NULL instance or struct, struct_size 0, index past the chain") {
    std::strcpy(message, "");
    refused(api->chain(nullptr, &info, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "instance");
    refused(api->chain(instance, nullptr, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "struct_size");
    kiln_robotmodel_chain_info zero{};
    refused(api->chain(instance, &zero, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "struct_size");
    CHECK(zero.dof == 0);  // nothing written on an error
    refused(api->joint(nullptr, 0, &joint, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "instance");
    refused(api->joint(instance, 0, nullptr, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "struct_size");
    kiln_robotmodel_joint zero_joint{};
    refused(api->joint(instance, 0, &zero_joint, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "struct_size");
    refused(api->joint(instance, dof, &joint, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "index");
    refused(api->joint(instance, UINT32_MAX, &joint, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "index");
  }
  SUBCASE("a struct from an older host: nothing is written past its struct_size") {
    kiln_robotmodel_joint old{};
    std::memset(&old, 0xAB, sizeof old);
    old.struct_size = static_cast<uint32_t>(offsetof(kiln_robotmodel_joint, origin_position));
    REQUIRE(api->joint(instance, 0, &old, nullptr, 0) == KILN_OK);
    CHECK(old.type >= KILN_ROBOTMODEL_JOINT_REVOLUTE);
    CHECK(old.type <= KILN_ROBOTMODEL_JOINT_PRISMATIC);
    const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&old);
    bool untouched = true;
    for (std::size_t k = old.struct_size; k < sizeof old; ++k) untouched = untouched && bytes[k] == 0xAB;
    CHECK(untouched);
  }
  SUBCASE("fk: NULL instance or buffers, count 0, huge counts") {
    std::vector<double> q(dof, 0.1), pose(KILN_ROBOTMODEL_POSE_SIZE, -7.0);
    refused(api->fk(nullptr, q.data(), 1, pose.data(), message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "instance");
    refused(api->fk(instance, nullptr, 1, pose.data(), message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "q and poses");
    refused(api->fk(instance, q.data(), 1, nullptr, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "q and poses");
    // A count past the limit is refused before any buffer is read or written (these hold one).
    refused(api->fk(instance, q.data(), KILN_ROBOTMODEL_MAX_COUNT + 1, pose.data(), message, sizeof message),
            KILN_ERR_INVALID_ARGUMENT, "KILN_ROBOTMODEL_MAX_COUNT");
    refused(api->fk(instance, q.data(), UINT32_MAX, pose.data(), message, sizeof message), KILN_ERR_INVALID_ARGUMENT,
            "split the batch");
    CHECK(pose[0] == -7.0);
    CHECK(api->fk(instance, nullptr, 0, nullptr, message, sizeof message) == KILN_OK);
    // No message buffer: the status alone.
    CHECK(api->fk(instance, nullptr, 1, nullptr, nullptr, 0) == KILN_ERR_INVALID_ARGUMENT);
    // A short buffer is truncated and NUL-terminated.
    char tiny[8];
    std::memset(tiny, 'x', sizeof tiny);
    CHECK(api->fk(instance, nullptr, 1, nullptr, tiny, sizeof tiny) == KILN_ERR_INVALID_ARGUMENT);
    CHECK(tiny[sizeof tiny - 1] == '\0');
  }
  SUBCASE("rnea: NULL instance or buffers, count 0, huge counts; or unsupported") {
    std::vector<double> q(dof, 0.1), tau(dof, -7.0);
    const double *d = q.data();
    refused(api->rnea(nullptr, d, d, d, 1, tau.data(), message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "instance");
    if (!has_rnea) {
      refused(api->rnea(instance, d, d, d, 1, tau.data(), message, sizeof message), KILN_ERR_UNSUPPORTED, "has_rnea");
      refused(api->rnea(instance, nullptr, nullptr, nullptr, 0, nullptr, message, sizeof message), KILN_ERR_UNSUPPORTED,
              "without dynamics");
      CHECK(tau[0] == -7.0);
      return;
    }
    refused(api->rnea(instance, nullptr, d, d, 1, tau.data(), message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "qdd");
    refused(api->rnea(instance, d, nullptr, d, 1, tau.data(), message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "qdd");
    refused(api->rnea(instance, d, d, nullptr, 1, tau.data(), message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "qdd");
    refused(api->rnea(instance, d, d, d, 1, nullptr, message, sizeof message), KILN_ERR_INVALID_ARGUMENT, "tau");
    refused(api->rnea(instance, d, d, d, UINT32_MAX, tau.data(), message, sizeof message), KILN_ERR_INVALID_ARGUMENT,
            "KILN_ROBOTMODEL_MAX_COUNT");
    CHECK(tau[0] == -7.0);
    CHECK(api->rnea(instance, nullptr, nullptr, nullptr, 0, nullptr, message, sizeof message) == KILN_OK);
  }
}

}  // namespace kiln::test::robotmodel
