// docs/architecture.md §5 compatibility, table-driven: artifact archs × device → image or refusal field.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/version.hpp>

#include "artifact/identity_json.hpp"

#include "support/checks.hpp"

using kiln::Arch;

namespace {

using kiln::test::make_device;

kiln::ArtifactIdentity make_artifact(const char *archs, int toolkit) {
  kiln::ArtifactIdentity artifact;
  const auto host = kiln::HostRequirements::current();
  artifact.key_schema = host.key_schema;
  artifact.artifact_schema = host.artifact_schema;
  artifact.abi_version = host.abi_version;
  if (*archs != '\0') artifact.archs = Arch::parse_list(archs);
  artifact.cuda_toolkit_version = toolkit;
  return artifact;
}

}  // namespace

TEST_CASE("device code: which image runs, or which field refuses") {
  struct Row {
    const char *archs;
    int major, minor;
    bool integrated;
    int driver;
    int toolkit;
    const char *image;  // expected image; "" when refused
    const char *field;  // expected single refusal field; "" when ok
    const char *how;    // substring of how (ok) or of the reason's note (refused)
  };
  constexpr bool desk = false;
  constexpr bool igpu = true;
  const Row rows[] = {
      // Orin code on a Hopper, and Hopper code on a declared Orin.
      {"sm_87", 9, 0, desk, 13000, 13000, "", "cuda_arch", "no image runs on compute capability 9.0"},
      {"sm_90", 8, 7, igpu, 12060, 13000, "", "cuda_arch", "no image runs on compute capability 8.7"},
      // Same major, lower minor: desktop yes, integrated no.
      {"sm_80", 8, 6, desk, 13000, 13000, "sm_80", "", "SASS sm_80 runs on 8.6 (same major, lower minor)"},
      {"sm_80", 8, 7, igpu, 13000, 13000, "", "cuda_arch", "integrated GPU: SASS must be built for exactly sm_87"},
      {"sm_87", 8, 7, igpu, 12060, 13000, "sm_87", "", "exact SASS sm_87"},
      {"sm_86", 8, 0, desk, 13000, 13000, "", "cuda_arch", "rebuild with --arch sm_80 or add PTX"},
      {"sm_75", 8, 0, desk, 13000, 13000, "", "cuda_arch", "same major"},
      {"sm_80", 9, 0, desk, 13000, 13000, "", "cuda_arch", "rebuild with --arch sm_90 or add PTX"},
      // Arch-specific: exact CC only.
      {"sm_90a", 9, 0, desk, 13000, 13000, "sm_90a", "", "exact SASS sm_90a"},
      {"sm_90a", 10, 0, desk, 13000, 13000, "", "cuda_arch", "compute capability 10.0"},
      {"sm_100a", 10, 3, desk, 13000, 13000, "", "cuda_arch", "sm_XYa the exact arch"},
      // Family: same major, device minor >= ours.
      {"sm_100f", 10, 3, desk, 13000, 13000, "sm_100f", "", "SASS sm_100f runs on 10.3 (same family 10.x"},
      {"sm_100f", 10, 0, desk, 13000, 13000, "sm_100f", "", "minor 0 >= 0"},
      {"sm_103f", 10, 0, desk, 13000, 13000, "", "cuda_arch", "compute capability 10.0"},
      {"sm_100f", 11, 0, igpu, 13000, 13000, "", "cuda_arch", "exactly sm_110"},
      {"sm_100f", 12, 0, desk, 13000, 13000, "", "cuda_arch", "compute capability 12.0"},
      {"sm_120f", 12, 1, igpu, 13000, 13000, "sm_120f", "", "SASS sm_120f runs on 12.1"},
      // Jetson Thor, DGX Spark: exact.
      {"sm_110", 11, 0, igpu, 13000, 13000, "sm_110", "", "exact SASS sm_110"},
      {"sm_121", 12, 1, igpu, 13000, 13000, "sm_121", "", "exact SASS sm_121"},
      {"sm_120", 12, 1, igpu, 13000, 13000, "", "cuda_arch", "exactly sm_121"},
      // PTX: CC at most the device's, driver at least the toolkit that wrote it.
      {"compute_80", 9, 0, desk, 13000, 13000, "compute_80", "", "PTX compute_80, JIT-compiled by the driver (no SASS for 9.0)"},
      {"compute_80", 9, 0, desk, 12060, 13000, "", "driver_version", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"},
      {"compute_80", 9, 0, desk, 13000, 12080, "compute_80", "", "JIT-compiled"},
      {"compute_80", 9, 0, desk, 12060, 12060, "compute_80", "", "JIT-compiled"},
      {"compute_90", 8, 6, desk, 13000, 13000, "", "cuda_arch", "PTX needs compute_XY with XY <= 86"},
      {"compute_75", 12, 1, igpu, 13000, 13000, "compute_75", "", "no SASS for 12.1"},
      {"compute_87", 8, 7, igpu, 12060, 12060, "compute_87", "", "JIT-compiled"},
      {"compute_90a", 9, 0, desk, 13000, 13000, "compute_90a", "", "JIT-compiled"},
      {"compute_90a", 10, 0, desk, 13000, 13000, "", "cuda_arch", "compute capability 10.0"},
      {"compute_100f", 10, 3, desk, 13000, 13000, "compute_100f", "", "JIT-compiled"},
      {"compute_100f", 12, 0, desk, 13000, 13000, "", "cuda_arch", "compute capability 12.0"},
      {"compute_90a", 9, 0, desk, 12060, 13000, "", "driver_version", "update the driver"},
      // Fat artifacts: the best image wins.
      {"sm_80,sm_86,sm_90,compute_90", 8, 9, desk, 13000, 13000, "sm_86", "", "SASS sm_86 runs on 8.9"},
      {"sm_80,sm_90,compute_90", 9, 0, desk, 13000, 13000, "sm_90", "", "exact SASS sm_90"},
      {"compute_90,sm_90,sm_90a", 9, 0, desk, 13000, 13000, "sm_90a", "", "exact SASS sm_90a"},
      {"sm_80,compute_80", 9, 0, desk, 13000, 13000, "compute_80", "", "no SASS for 9.0"},
      {"compute_75,sm_80,compute_80", 9, 0, desk, 13000, 13000, "compute_80", "", "PTX compute_80"},
      {"sm_100f,sm_100,sm_103", 10, 3, desk, 13000, 13000, "sm_103", "", "exact SASS sm_103"},
      {"sm_100,sm_100f", 10, 3, desk, 13000, 13000, "sm_100f", "", "family"},
      {"sm_100f,sm_103f", 10, 3, desk, 13000, 13000, "sm_103f", "", "minor 3 >= 3"},
      {"sm_80,sm_86,compute_80", 8, 7, igpu, 13000, 13000, "compute_80", "", "no SASS for 8.7"},
      {"sm_87,sm_90,compute_87", 8, 7, igpu, 12060, 13000, "sm_87", "", "exact SASS sm_87"},
      {"sm_90,compute_90", 9, 0, desk, 12060, 13000, "sm_90", "", "exact SASS sm_90"},
      {"sm_80,compute_90", 9, 0, desk, 12060, 13000, "", "driver_version", "PTX compute_90 was written by CUDA 13.0 and the driver is CUDA 12.6"},
      {"sm_80,sm_86,sm_89", 9, 0, desk, 13000, 13000, "", "cuda_arch", "rebuild with --arch sm_90"},
      {"sm_87,sm_90a,sm_100f,sm_110,sm_121,compute_121", 12, 0, desk, 13000, 13000, "", "cuda_arch", "compute capability 12.0"},
  };
  const auto host = kiln::HostRequirements::current();
  for (const auto &row : rows) {
    const auto device = make_device(row.major, row.minor, row.integrated, row.driver);
    const auto artifact = make_artifact(row.archs, row.toolkit);
    CAPTURE(row.archs);
    CAPTURE(device.arch_name());
    CAPTURE(row.integrated);
    CAPTURE(row.driver);
    const auto result = kiln::check_compatibility(artifact, host, &device);
    CAPTURE(result.how);
    if (*row.field == '\0') {
      CHECK(result.ok);
      CHECK(result.reasons.empty());
      REQUIRE(result.image.has_value());
      CHECK(result.image->to_string() == row.image);
      CHECK(result.how.find(row.how) != std::string::npos);
    } else {
      CHECK_FALSE(result.ok);
      CHECK_FALSE(result.image.has_value());
      REQUIRE(result.reasons.size() == 1);
      const auto &reason = result.reasons[0];
      CAPTURE(reason.to_string());
      CHECK(reason.field == row.field);
      CHECK(reason.note.find(row.how) != std::string::npos);
      if (reason.field == "cuda_arch") {
        CHECK(reason.recorded == row.archs);
        CHECK(reason.current == device.arch_name());
      } else {
        CHECK(reason.recorded == std::to_string(row.toolkit));
        CHECK(reason.current == std::to_string(row.driver));
      }
    }
  }
}

TEST_CASE("the refusal wording of the design's examples") {
  const auto host = kiln::HostRequirements::current();
  const auto hopper = make_device(9, 0, false, 13000);
  auto result = kiln::check_compatibility(make_artifact("sm_87", 13000), host, &hopper);
  REQUIRE(result.reasons.size() == 1);
  CHECK(result.reasons[0].to_string().rfind("cuda_arch: recorded sm_87, current sm_90 (no image runs on "
                                            "compute capability 9.0: SASS needs the same major",
                                            0) == 0);
  const auto old_driver = make_device(9, 0, false, 12060);
  result = kiln::check_compatibility(make_artifact("compute_80", 13000), host, &old_driver);
  REQUIRE(result.reasons.size() == 1);
  CHECK(result.reasons[0].field == "driver_version");
  CHECK(result.reasons[0].recorded == "13000");
  CHECK(result.reasons[0].current == "12060");
}

TEST_CASE("host side: schemas and plugin ABI, each naming its field") {
  const auto host = kiln::HostRequirements::current();
  const auto device = make_device(9, 0, false, 13000);
  const auto major = KILN_ABI_VERSION_MAJOR_OF(host.abi_version);
  struct Row {
    const char *name;
    int key_schema_delta;
    int artifact_schema_delta;
    std::uint32_t abi;  // artifact's abi_version
    std::uint32_t abi_required_minor;  // host's requirement
    std::vector<std::string> fields;
  };
  const Row rows[] = {
      {"all equal", 0, 0, host.abi_version, 0, {}},
      {"key schema newer", 1, 0, host.abi_version, 0, {"key_schema"}},
      {"key schema older", -1, 0, host.abi_version, 0, {"key_schema"}},
      {"artifact schema", 0, 1, host.abi_version, 0, {"artifact_schema"}},
      {"both schemas", 1, -1, host.abi_version, 0, {"key_schema", "artifact_schema"}},
      {"abi major above", 0, 0, KILN_ABI_MAKE_VERSION(major + 1, 0), 0, {"abi_version"}},
      {"abi major below", 0, 0, KILN_ABI_MAKE_VERSION(major - 1, 9), 0, {"abi_version"}},
      {"abi minor below the requirement", 0, 0, KILN_ABI_MAKE_VERSION(major, 1), 2, {"abi_version"}},
      {"abi minor at the requirement", 0, 0, KILN_ABI_MAKE_VERSION(major, 2), 2, {}},
      {"abi minor above the host", 0, 0, KILN_ABI_MAKE_VERSION(major, 7), 0, {}},
      {"no plugin ABI (device images)", 0, 0, 0, 3, {}},
      {"everything wrong", 2, 2, KILN_ABI_MAKE_VERSION(major + 1, 0), 0,
       {"key_schema", "artifact_schema", "abi_version"}},
  };
  for (const auto &row : rows) {
    CAPTURE(row.name);
    auto artifact = make_artifact("sm_90", 13000);
    artifact.key_schema += row.key_schema_delta;
    artifact.artifact_schema += row.artifact_schema_delta;
    artifact.abi_version = row.abi;
    auto requirements = host;
    requirements.abi_required = KILN_ABI_MAKE_VERSION(major, row.abi_required_minor);
    requirements.abi_version = KILN_ABI_MAKE_VERSION(major, std::max(row.abi_required_minor, 2u));
    for (const kiln::DeviceIdentity *target : {&device, static_cast<const kiln::DeviceIdentity *>(nullptr)}) {
      const auto result = kiln::check_compatibility(artifact, requirements, target);
      std::vector<std::string> fields;
      for (const auto &reason : result.reasons) fields.push_back(reason.field);
      CHECK(fields == row.fields);
      CHECK(result.ok == row.fields.empty());
      if (!result.ok) CHECK_FALSE(result.image.has_value());
    }
  }
  // The recorded and current values are the ones that differ.
  auto artifact = make_artifact("sm_90", 13000);
  artifact.key_schema = host.key_schema + 4;
  artifact.abi_version = KILN_ABI_MAKE_VERSION(major + 1, 3);
  const auto result = kiln::check_compatibility(artifact, host, &device);
  REQUIRE(result.reasons.size() == 2);
  CHECK(result.reasons[0].recorded == std::to_string(host.key_schema + 4));
  CHECK(result.reasons[0].current == std::to_string(host.key_schema));
  CHECK(result.reasons[1].recorded == std::to_string(major + 1) + ".3");
  CHECK(result.reasons[1].current == std::to_string(major) + "." +
                                         std::to_string(KILN_ABI_VERSION_MINOR_OF(host.abi_version)));
}

TEST_CASE("host and device reasons are listed together") {
  const auto host = kiln::HostRequirements::current();
  const auto orin = make_device(8, 7, true, 12060);
  auto artifact = make_artifact("sm_90", 13000);
  artifact.artifact_schema += 1;
  const auto result = kiln::check_compatibility(artifact, host, &orin);
  REQUIRE(result.reasons.size() == 2);
  CHECK(result.reasons[0].field == "artifact_schema");
  CHECK(result.reasons[1].field == "cuda_arch");
  CHECK_FALSE(result.image.has_value());
}

TEST_CASE("host-only code and unchecked devices") {
  const auto host = kiln::HostRequirements::current();
  const auto device = make_device(9, 0, false, 13000);
  const auto host_only = make_artifact("", 0);
  for (const kiln::DeviceIdentity *target : {&device, static_cast<const kiln::DeviceIdentity *>(nullptr)}) {
    const auto result = kiln::check_compatibility(host_only, host, target);
    CHECK(result.ok);
    CHECK_FALSE(result.image.has_value());
    CHECK(result.how.find("host-only") != std::string::npos);
  }
  const auto result = kiln::check_compatibility(make_artifact("sm_87", 13000), host, nullptr);
  CHECK(result.ok);
  CHECK_FALSE(result.image.has_value());
  CHECK(result.how.find("not checked") != std::string::npos);
}

TEST_CASE("Reason::to_string and IncompatibleError") {
  const kiln::Reason with_note{"cuda_arch", "sm_87", "sm_90", "rebuild with --arch sm_90"};
  CHECK(with_note.to_string() == "cuda_arch: recorded sm_87, current sm_90 (rebuild with --arch sm_90)");
  const kiln::Reason bare{"key_schema", "2", "1", ""};
  CHECK(bare.to_string() == "key_schema: recorded 2, current 1");

  const kiln::IncompatibleError error("hjcd-ik/ik_solver", {with_note, bare});
  CHECK(std::string(error.what()) ==
        "hjcd-ik/ik_solver: cuda_arch: recorded sm_87, current sm_90 (rebuild with --arch sm_90); "
        "key_schema: recorded 2, current 1");
  CHECK(error.kind() == kiln::ErrorKind::incompatible);
  CHECK(error.exit_code() == 4);
  REQUIRE(error.reasons().size() == 2);
  CHECK(error.reasons()[1].field == "key_schema");
  CHECK(std::string(kiln::IncompatibleError("x", {}).what()) == "x");
}

TEST_CASE("compatibility JSON") {
  const auto host = kiln::HostRequirements::current();
  const auto device = make_device(8, 6, false, 13000);
  auto report_json = kiln::artifact::to_json(kiln::check_compatibility(make_artifact("sm_80", 13000), host, &device));
  CHECK(report_json["ok"] == true);
  CHECK(report_json["image"] == "sm_80");
  CHECK(report_json["reasons"].empty());
  report_json = kiln::artifact::to_json(kiln::check_compatibility(make_artifact("sm_90", 13000), host, &device));
  CHECK(report_json["ok"] == false);
  CHECK(report_json["image"].is_null());
  REQUIRE(report_json["reasons"].size() == 1);
  CHECK(report_json["reasons"][0]["field"] == "cuda_arch");
  CHECK(report_json["reasons"][0]["recorded"] == "sm_90");
  CHECK(report_json["reasons"][0]["current"] == "sm_86");
}
