// kiln IK tests: "kiln.robotmodel/1" (abi/kiln/ext/robotmodel.h) of the IK plugins generated from a URDF
// (iiwa14, Panda, the split form's host part), without activate and without a device: the chain as
// kiln.ik/1 describes it, fk at the URDFs' published values and against the chain's own description,
// kiln.ik/1's float fk as the same computation rounded, no dynamics, and every bad argument refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/ext/robotmodel.h>

#include "ik_test_support.hpp"
#include "robotmodel_abi_layout.h"
#include "support/robotmodel_checks.hpp"

extern "C" size_t kiln_robotmodel_test_c_layout(size_t *out, size_t capacity);

namespace {

using namespace kiln::test::robotmodel;

// A plugin file published into a temporary store (archs "": those the file holds, none for the split
// form's host part) and loaded.
struct Published {
  Published(const std::string &file, const std::string &archs)
      : runtime(std::make_unique<kiln::Runtime>(kiln::test::store_options(dir))) {
    kiln::PublishRequest request;
    request.consumer = "ik-tests";
    request.name = "model";
    request.artifact_file = file;
    if (!archs.empty()) request.archs = kiln::Arch::parse_list(archs);
    runtime->publish(request);
    module.emplace(runtime->load("ik-tests", "model"));
  }
  kiln::test::TempDir dir;
  std::unique_ptr<kiln::Runtime> runtime;
  std::optional<kiln::Module> module;
};

// A loaded IK plugin's instance (never activated) and its two tables.
struct Model {
  explicit Model(const std::string &file, const std::string &archs = KILN_IK_PLUGIN_ARCHS)
      : plugin(file, archs), instance(plugin.module->create_instance()),
        ik(instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID)),
        model(instance.interface<kiln_robotmodel_v1>(KILN_ROBOTMODEL_INTERFACE_ID)) {}
  Published plugin;
  kiln::Instance instance;
  const kiln_ik_v1 *ik;
  const kiln_robotmodel_v1 *model;
};

struct Plugin {
  const char *name, *file, *archs;
};
const Plugin kPlugins[] = {{"iiwa14", KILN_IK_PLUGIN_IIWA14, KILN_IK_PLUGIN_ARCHS},
                           {"panda", KILN_IK_PLUGIN_PANDA, KILN_IK_PLUGIN_ARCHS},
                           {"iiwa14 split host part", KILN_IK_PLUGIN_IIWA14_SPLIT, ""}};

bool lists(const kiln_plugin_entry &entry, const char *id) {
  for (const char *const *i = entry.interface_ids; i != nullptr && *i != nullptr; ++i)
    if (std::strcmp(*i, id) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("kiln.robotmodel/1: struct layouts are fixed and the same from C and C++") {
  const std::vector<size_t> cxx = {KILN_ROBOTMODEL_ABI_LAYOUT};
  // LP64; append only: 1.1 appended model_fingerprint after 1.0's 392-byte chain info.
  const std::vector<size_t> expected = {456, 16, 136, 232, 32, 128, 168, 48, 40, 392};
  std::vector<size_t> c(cxx.size());
  REQUIRE(kiln_robotmodel_test_c_layout(c.data(), c.size()) == cxx.size());
  CHECK(c == cxx);
  CHECK(cxx == expected);
  CHECK(std::string(KILN_ROBOTMODEL_INTERFACE_ID) == "kiln.robotmodel/1");
}

// 1.1: the model's fingerprint; the same for the two forms of the iiwa14 plugin (one URDF, one
// chain), another for the Panda; a 1.0 host's smaller struct is not written past.
TEST_CASE("kiln.robotmodel/1 1.1: chain_info.model_fingerprint tells plugins of one robot model from another") {
  std::vector<std::string> prints;
  for (const Plugin &p : kPlugins) {
    CAPTURE(std::string(p.name));
    Model m(p.file, p.archs);
    REQUIRE(m.model != nullptr);
    const std::string print = chain_info(m.model, m.instance.handle()).model_fingerprint;
    CHECK(print.size() == 7 + 32);
    CHECK(print.rfind("xxh128:", 0) == 0);
    CHECK(print.find_first_not_of("0123456789abcdef", 7) == std::string::npos);
    prints.push_back(print);
    kiln_robotmodel_chain_info old{};
    old.struct_size = offsetof(kiln_robotmodel_chain_info, model_fingerprint);
    std::memset(old.model_fingerprint, 'x', sizeof old.model_fingerprint);
    char message[256] = "";
    REQUIRE(m.model->chain(m.instance.handle(), &old, message, sizeof message) == KILN_OK);
    CHECK(old.model_fingerprint[0] == 'x');
    CHECK(old.model_fingerprint[sizeof old.model_fingerprint - 1] == 'x');
    CHECK(old.dof == 7);
  }
  CHECK(prints[0] == prints[2]);  // iiwa14, nvcc form and split form
  CHECK(prints[0] != prints[1]);  // iiwa14, Panda
}

TEST_CASE("ik robotmodel: every IK plugin offers kiln.robotmodel/1 and describes the chain kiln.ik/1 solves for") {
  for (const Plugin &p : kPlugins) {
    CAPTURE(std::string(p.name));
    Model m(p.file, p.archs);
    REQUIRE(m.ik != nullptr);
    REQUIRE(m.model != nullptr);
    CHECK(lists(m.plugin.module->entry(), KILN_ROBOTMODEL_INTERFACE_ID));
    CHECK(m.model->struct_size >= sizeof(kiln_robotmodel_v1));
    const kiln_instance *h = m.instance.handle();
    kiln_ik_info info{};
    info.struct_size = sizeof info;
    REQUIRE(m.ik->info(h, &info) == KILN_OK);
    CHECK(info.active == 0);  // everything below works without activate
    const kiln_robotmodel_chain_info chain = chain_info(m.model, h);
    CHECK(chain.dof == info.dof);
    CHECK(m.model->dof(h) == info.dof);
    CHECK(std::string(chain.robot) == info.robot);
    CHECK(std::string(chain.base_link) == info.base_link);
    CHECK(std::string(chain.tip_link) == info.tip_link);
    CHECK(std::string(chain.source) == info.source);
    CHECK(chain.has_rnea == 0);  // the IK chains are generated without dynamics
    CHECK((chain.gravity[0] == 0 && chain.gravity[1] == 0 && chain.gravity[2] == 0));
    const std::vector<kiln_robotmodel_joint> js = joints(m.model, h);
    for (uint32_t j = 0; j < info.dof; ++j) {
      CAPTURE(j);
      kiln_ik_joint_info expected{};
      expected.struct_size = sizeof expected;
      REQUIRE(m.ik->joint_info(h, j, &expected) == KILN_OK);
      CHECK(std::string(js[j].name) == expected.name);
      CHECK(js[j].name_length == expected.name_length);
      CHECK(js[j].type == expected.type);
      CHECK(js[j].lower == expected.lower);
      CHECK(js[j].upper == expected.upper);
      for (int k = 0; k < 3; ++k) CHECK(js[j].axis[k] == expected.axis[k]);
      CHECK(js[j].position_limited == (expected.type == KILN_IK_JOINT_CONTINUOUS ? 0u : 1u));
      // Both URDFs give every joint a velocity and an effort limit.
      CHECK(js[j].velocity_limit > 0);
      CHECK(js[j].effort_limit > 0);
    }
  }
}

TEST_CASE("ik robotmodel: fk at q = 0 is the URDFs' published tip position") {
  // /work/shared/robots/README.md's figures: the iiwa14's lbr_iiwa_link_7 straight up at 1.261 m, the
  // Panda's panda_grasptarget at (0.088, 0, 0.821).
  const struct {
    const char *file;
    double x, y, z;
  } expected[] = {{KILN_IK_PLUGIN_IIWA14, 0.0, 0.0, 1.261}, {KILN_IK_PLUGIN_PANDA, 0.088, 0.0, 0.821}};
  for (const auto &e : expected) {
    CAPTURE(e.file);
    Model m(e.file);
    const std::vector<double> q(m.model->dof(m.instance.handle()), 0.0);
    double pose[KILN_ROBOTMODEL_POSE_SIZE];
    char message[256] = "";
    REQUIRE_MESSAGE(m.model->fk(m.instance.handle(), q.data(), 1, pose, message, sizeof message) == KILN_OK, message);
    CHECK(std::fabs(pose[0] - e.x) < 1e-12);
    CHECK(std::fabs(pose[1] - e.y) < 1e-12);
    CHECK(std::fabs(pose[2] - e.z) < 1e-12);
  }
}

TEST_CASE("ik robotmodel: fk agrees with the chain's own description (origins, axes, joint types)") {
  for (const Plugin &p : kPlugins) {
    CAPTURE(std::string(p.name));
    Model m(p.file, p.archs);
    const double worst = check_fk_matches_description(m.model, m.instance.handle(), 7);
    MESSAGE(std::string(p.name) << ": fk vs the composed description, worst difference " << worst);
  }
}

TEST_CASE("ik robotmodel: kiln.ik/1's float fk is kiln.robotmodel/1's double fk rounded") {
  for (const Plugin &p : kPlugins) {
    CAPTURE(std::string(p.name));
    Model m(p.file, p.archs);
    const kiln_instance *h = m.instance.handle();
    const uint32_t dof = m.model->dof(h), count = 100;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    std::vector<float> qf(size_t{count} * dof), posef(size_t{count} * KILN_IK_POSE_SIZE);
    for (float &v : qf) v = u(rng);
    const std::vector<double> qd(qf.begin(), qf.end());
    std::vector<double> posed(size_t{count} * KILN_ROBOTMODEL_POSE_SIZE);
    REQUIRE(m.ik->fk(h, qf.data(), count, posef.data()) == KILN_OK);
    REQUIRE(m.model->fk(h, qd.data(), count, posed.data(), nullptr, 0) == KILN_OK);
    uint32_t equal = 0;
    for (size_t k = 0; k < posef.size(); ++k) equal += posef[k] == static_cast<float>(posed[k]) ? 1u : 0u;
    CHECK(equal == posef.size());
  }
}

TEST_CASE("ik robotmodel: bad arguments are typed errors naming the argument, never a crash") {
  Model m(KILN_IK_PLUGIN_PANDA);
  check_bad_inputs(m.model, m.instance.handle(), /*has_rnea=*/false);
}
