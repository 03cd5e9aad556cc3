// The Jetson path of the IK plugin's split form, run by CI's aarch64 stage under the emulator
// (docs/jetson.md "Deploying to a Jetson"): the workstation's NVRTC device images arrive in a signed
// bundle, the cross-built aarch64 host part is published by the aarch64 kiln, both travel in one
// signed bundle into a read-only vendor layer, and the robot (a declared Orin or Thor, no
// toolchain) loads the host part from that layer, is offered the image of its exact arch, and
// solves host only. scripts/test's aarch64 stage makes the inputs and names them:
//   KILN_TEST_SPLIT_HOST_PART       the cross-built libkiln_ik_iiwa14_split.so
//   KILN_TEST_SPLIT_KERNELS_BUNDLE  kiln-ik/iiwa14-split-kernels, built by the x86 kiln (NVRTC)
//   KILN_TEST_SPLIT_TRUST           the public key that bundle is signed with
// Elsewhere the case is skipped, saying so (natively, tests/ik/test_ik_split.cpp solves the same).
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include <boost/filesystem/operations.hpp>

#include <kiln/bundle.hpp>
#include <kiln/ext/ik.h>
#include <kiln/ext/selftest.h>
#include <kiln/runtime.hpp>

#include "ik/ik_solve_check.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"

namespace {

namespace fs = boost::filesystem;
using kiln::test::ik_split::solve_random;

std::string setting(const char *name) {
  const char *value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::optional<std::string> no_split_artifacts() {
  for (const char *name : {"KILN_TEST_SPLIT_HOST_PART", "KILN_TEST_SPLIT_KERNELS_BUNDLE", "KILN_TEST_SPLIT_TRUST"}) {
    if (setting(name).empty() || !fs::exists(setting(name))) {
      return std::string(name) + " is not set to a file (scripts/test's aarch64 stage makes the split form's "
                                 "artifacts for this case)";
    }
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("jetson: the split form's bundle into a read-only layer; the robot loads the host part and solves host only" *
          kiln::test::skip_if(no_split_artifacts)) {
  kiln::test::TempDir dir;
  const std::string declared = setting("KILN_DEVICE").empty() ? "sm_87,integrated=1" : setting("KILN_DEVICE");

  // The image build: the workstation's kernels imported (signature checked), the aarch64 host
  // part published by this (aarch64) kiln, both exported in one bundle signed by the vendor key.
  kiln::RuntimeOptions build_options;
  build_options.cache_dir = (dir / "image-build").string();
  build_options.declared_device = declared;
  kiln::Runtime image_build(build_options);
  kiln::ImportRequest kernels;
  kernels.bundle = setting("KILN_TEST_SPLIT_KERNELS_BUNDLE");
  kernels.trusted_keys = {setting("KILN_TEST_SPLIT_TRUST")};
  CHECK(image_build.import_bundle(kernels).signature_verified);
  kiln::PublishRequest host_part;
  host_part.consumer = "kiln-ik";
  host_part.name = "iiwa14-split";
  host_part.artifact_file = setting("KILN_TEST_SPLIT_HOST_PART");  // host code only: no archs
  image_build.publish(host_part);
  const kiln::KeyPair vendor = kiln::generate_keypair((dir / "vendor").string());
  kiln::ExportRequest request;
  request.consumer = "kiln-ik";
  request.output = (dir / "ik.kbundle").string();
  request.signing_key = vendor.secret_file;
  CHECK(image_build.export_bundle(request).entries.size() == 2);

  kiln::ImportRequest into_layer;
  into_layer.bundle = request.output;
  into_layer.into = (dir / "vendor-layer").string();
  into_layer.trusted_keys = {vendor.public_file};
  CHECK(image_build.import_bundle(into_layer).entries.size() == 2);

  // The robot: the layer read-only (as far as permissions go), a cache of its own.
  for (fs::recursive_directory_iterator it(dir / "vendor-layer"), end; it != end; ++it) {
    if (!fs::is_symlink(it->path())) fs::permissions(it->path(), fs::remove_perms | fs::owner_write | fs::group_write | fs::others_write);
  }
  kiln::RuntimeOptions robot_options;
  robot_options.read_only_stores = {into_layer.into};
  robot_options.cache_dir = (dir / "robot-cache").string();
  robot_options.declared_device = declared;
  kiln::Runtime robot(robot_options);
  kiln::Module module = robot.load("kiln-ik", "iiwa14-split");
  CHECK(fs::equivalent(module.report().resolution.store_root, into_layer.into));
  CHECK(module.report().plugin_id == "org.kiln.ik.iiwa14");

  // The device images offer this robot's exact SASS (Tegra runs no other).
  const kiln::Resolution images = robot.resolve("kiln-ik", "iiwa14-split-kernels");
  const kiln::DeviceIdentity &device = robot.devices().effective().front();
  const kiln::Compatibility fit = robot.check(images, &device);
  CHECK_MESSAGE(fit.ok, fit.how);
  REQUIRE(fit.image.has_value());
  CHECK(fit.image->to_string() == device.arch_name());

  kiln::Instance instance = module.create_instance();
  const auto *ik = instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
  REQUIRE(ik != nullptr);
  instance.activate(-1, 64);  // host only: no driver under the emulator
  const auto solved = solve_random(*ik, instance.handle(), 64, 5);
  MESSAGE("split host part from the layer, " << declared << ": " << solved.good << " / 64 within 1 mm / 0.01 rad");
  CHECK(solved.good == 64);
  const auto *selftest = instance.interface<kiln_selftest_v1>(KILN_SELFTEST_INTERFACE_ID);
  REQUIRE(selftest != nullptr);
  char message[512] = "";
  CHECK_MESSAGE(selftest->run(instance.handle(), message, sizeof message) == KILN_OK, message);
}
