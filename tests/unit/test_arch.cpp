// Arch names: parsing, printing, lists; the JSON form of artifact identities.
#include <doctest/doctest.h>

#include <string>

#include <kiln/identity.hpp>
#include <kiln/version.hpp>

#include "artifact/identity_json.hpp"

using kiln::Arch;

namespace {

std::string parse_error(const std::string &text) {
  try {
    Arch::parse(text);
  } catch (const kiln::UsageError &error) {
    return error.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("Arch::parse reads SASS and PTX names") {
  struct Row {
    const char *text;
    Arch::Kind kind;
    int major;
    int minor;
    char suffix;
  };
  const Row rows[] = {
      {"sm_75", Arch::Kind::sass, 7, 5, '\0'},     {"sm_80", Arch::Kind::sass, 8, 0, '\0'},
      {"sm_86", Arch::Kind::sass, 8, 6, '\0'},     {"sm_87", Arch::Kind::sass, 8, 7, '\0'},
      {"sm_89", Arch::Kind::sass, 8, 9, '\0'},     {"sm_90", Arch::Kind::sass, 9, 0, '\0'},
      {"sm_90a", Arch::Kind::sass, 9, 0, 'a'},     {"sm_100", Arch::Kind::sass, 10, 0, '\0'},
      {"sm_100a", Arch::Kind::sass, 10, 0, 'a'},   {"sm_100f", Arch::Kind::sass, 10, 0, 'f'},
      {"sm_103f", Arch::Kind::sass, 10, 3, 'f'},   {"sm_110", Arch::Kind::sass, 11, 0, '\0'},
      {"sm_120", Arch::Kind::sass, 12, 0, '\0'},   {"sm_121", Arch::Kind::sass, 12, 1, '\0'},
      {"sm_121a", Arch::Kind::sass, 12, 1, 'a'},   {"compute_75", Arch::Kind::ptx, 7, 5, '\0'},
      {"compute_90", Arch::Kind::ptx, 9, 0, '\0'}, {"compute_90a", Arch::Kind::ptx, 9, 0, 'a'},
      {"compute_100f", Arch::Kind::ptx, 10, 0, 'f'}, {"compute_121", Arch::Kind::ptx, 12, 1, '\0'},
  };
  for (const auto &row : rows) {
    CAPTURE(row.text);
    const Arch arch = Arch::parse(row.text);
    CHECK(arch.kind == row.kind);
    CHECK(arch.major == row.major);
    CHECK(arch.minor == row.minor);
    CHECK(arch.suffix == row.suffix);
    CHECK(arch.cc() == row.major * 10 + row.minor);
    CHECK(arch.to_string() == row.text);
    CHECK(Arch::parse(arch.to_string()) == arch);
  }
}

TEST_CASE("Arch::parse refuses anything else, naming the text and the forms") {
  const char *bad[] = {"",        "sm",      "sm_",      "sm_9",    "sm_1000", "sm_90b",
                       "sm_90af", "SM_90",   "sm90",     "sm_90 ",  " sm_90",  "compute_",
                       "lto_90",  "sm_x0",   "sm_-90",   "sm_090",  "sm_9a",   "arch=sm_90",
                       "sm_90,",  "cuda_90", "sm_90.0",  "sm_+90"};
  for (const char *text : bad) {
    CAPTURE(text);
    const std::string message = parse_error(text);
    CHECK(message != "(accepted)");
    CHECK(message.find(std::string("\"") + text + "\"") != std::string::npos);
    CHECK(message.find("sm_75") != std::string::npos);
  }
  // The message shows the forms with an example.
  CHECK(parse_error("sm_9").find("e.g. sm_87") != std::string::npos);
}

TEST_CASE("Arch::parse refuses the archs CUDA 13 removed") {
  for (const char *text : {"sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72",
                           "compute_70", "compute_72"}) {
    CAPTURE(text);
    const std::string message = parse_error(text);
    CHECK(message.find(std::string("\"") + text + "\"") != std::string::npos);
    CHECK(message.find("CUDA 13") != std::string::npos);
    CHECK(message.find("sm_75 ... sm_121") != std::string::npos);
    CHECK(message.find("e.g. sm_87") != std::string::npos);
  }
}

TEST_CASE("Arch::parse refuses suffixes on archs that have none") {
  CHECK(parse_error("sm_86a").find("from sm_90a on") != std::string::npos);
  CHECK(parse_error("sm_90f").find("from sm_100f on") != std::string::npos);
  CHECK(parse_error("compute_80a").find("use compute_80") != std::string::npos);
}

TEST_CASE("Arch::parse_list") {
  const auto archs = Arch::parse_list("sm_87,sm_90a, compute_90 ,sm_100f");
  REQUIRE(archs.size() == 4);
  CHECK(archs[0] == Arch::parse("sm_87"));
  CHECK(archs[1] == Arch::parse("sm_90a"));
  CHECK(archs[2] == Arch::parse("compute_90"));
  CHECK(archs[3] == Arch::parse("sm_100f"));
  CHECK(Arch::parse_list("sm_90").size() == 1);

  for (const char *text : {"", ",", "sm_90,", ",sm_90", "sm_90,,sm_80", "sm_90, ,sm_80"}) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(Arch::parse_list(text), doctest::Contains("is empty"), kiln::UsageError);
  }
  CHECK_THROWS_WITH_AS(Arch::parse_list("sm_90,sm_70"), doctest::Contains("\"sm_70\""),
                       kiln::UsageError);
  CHECK_THROWS_WITH_AS(Arch::parse_list("sm_90,sm_90"), doctest::Contains("listed twice"),
                       kiln::UsageError);
}

TEST_CASE("Arch equality covers kind and suffix") {
  CHECK(Arch::parse("sm_90") != Arch::parse("compute_90"));
  CHECK(Arch::parse("sm_90") != Arch::parse("sm_90a"));
  CHECK(Arch::parse("sm_100a") != Arch::parse("sm_100f"));
  CHECK(Arch::parse("sm_121") == Arch::parse("sm_121"));
}

TEST_CASE("DeviceIdentity::arch_name, DriverState names, host requirements") {
  kiln::DeviceIdentity device;
  device.cc_major = 12;
  device.cc_minor = 1;
  CHECK(device.arch_name() == "sm_121");
  device.cc_major = 8;
  device.cc_minor = 7;
  CHECK(device.arch_name() == "sm_87");

  CHECK(std::string(kiln::to_string(kiln::DriverState::ok)) == "ok");
  CHECK(std::string(kiln::to_string(kiln::DriverState::no_driver)) == "no_driver");
  CHECK(std::string(kiln::to_string(kiln::DriverState::stub_library)) == "stub_library");
  CHECK(std::string(kiln::to_string(kiln::DriverState::no_device)) == "no_device");
  CHECK(std::string(kiln::to_string(kiln::DriverState::init_failed)) == "init_failed");

  const auto host = kiln::HostRequirements::current();
  CHECK(host.key_schema == kiln::kKeySchema);
  CHECK(host.artifact_schema == kiln::kArtifactSchema);
  CHECK(host.abi_version == kiln::kAbiVersion);
  CHECK(KILN_ABI_VERSION_MAJOR_OF(host.abi_required) == KILN_ABI_VERSION_MAJOR_OF(kiln::kAbiVersion));
  CHECK(KILN_ABI_VERSION_MINOR_OF(host.abi_required) == 0);
}

TEST_CASE("artifact identity JSON round trip") {
  kiln::ArtifactIdentity artifact;
  artifact.key_schema = 1;
  artifact.artifact_schema = 1;
  artifact.abi_version = KILN_ABI_MAKE_VERSION(1, 2);
  artifact.archs = Arch::parse_list("sm_87,sm_90a,compute_90");
  artifact.cuda_toolkit_version = 13000;
  artifact.provenance = {{"nvcc", "13.0.48"}, {"host_compiler", "g++ 12.2"}};

  const auto json = kiln::artifact::to_json(artifact);
  CHECK(json["archs"] == nlohmann::json::array({"sm_87", "sm_90a", "compute_90"}));
  CHECK(json["abi_version"] == 0x10002);
  CHECK(json["cuda_toolkit_version"] == 13000);
  CHECK(json["provenance"]["nvcc"] == "13.0.48");

  const auto back = kiln::artifact::artifact_identity_from_json(json, "identity.json");
  CHECK(back.key_schema == artifact.key_schema);
  CHECK(back.artifact_schema == artifact.artifact_schema);
  CHECK(back.abi_version == artifact.abi_version);
  CHECK(back.archs == artifact.archs);
  CHECK(back.cuda_toolkit_version == artifact.cuda_toolkit_version);
  CHECK(back.provenance == artifact.provenance);

  // Text round trip too, and provenance is optional.
  auto parsed = nlohmann::json::parse(json.dump());
  parsed.erase("provenance");
  CHECK(kiln::artifact::artifact_identity_from_json(parsed, "x").provenance.empty());
}

TEST_CASE("artifact identity JSON: malformed records name the file and the field") {
  const auto good = kiln::artifact::to_json(kiln::ArtifactIdentity{
      1, 1, 0, Arch::parse_list("sm_90"), 13000, {}, {}});
  struct Row {
    const char *field;
    nlohmann::json value;  // null: remove the field
    const char *expect;
  };
  const Row rows[] = {
      {"key_schema", nullptr, "\"key_schema\" is missing"},
      {"key_schema", "1", "\"key_schema\" is not an integer"},
      {"artifact_schema", 1.5, "\"artifact_schema\" is not an integer"},
      {"artifact_schema", -1, "\"artifact_schema\" is out of range"},
      {"abi_version", -1, "\"abi_version\" is not an unsigned"},
      {"abi_version", 4294967296ull, "\"abi_version\" is not an unsigned"},
      {"abi_version", nullptr, "\"abi_version\" is missing"},
      {"archs", "sm_90", "\"archs\" is not an array"},
      {"archs", nlohmann::json::array({"sm_90", 7}), "\"archs[1]\" is not a string"},
      {"archs", nlohmann::json::array({"sm_90", "sm_70"}), "\"archs[1]\" is not an arch"},
      {"cuda_toolkit_version", nullptr, "\"cuda_toolkit_version\" is missing"},
      {"provenance", "x", "\"provenance\" is not an object"},
  };
  for (const auto &row : rows) {
    CAPTURE(row.expect);
    auto json = good;
    if (row.value.is_null()) {
      json.erase(row.field);
    } else {
      json[row.field] = row.value;
    }
    CHECK_THROWS_WITH_AS(kiln::artifact::artifact_identity_from_json(json, "/store/abc/identity.json"),
                         doctest::Contains(row.expect), kiln::IntegrityError);
    CHECK_THROWS_WITH_AS(kiln::artifact::artifact_identity_from_json(json, "/store/abc/identity.json"),
                         doctest::Contains("/store/abc/identity.json"), kiln::IntegrityError);
  }
  CHECK_THROWS_WITH_AS(kiln::artifact::artifact_identity_from_json(nlohmann::json::array(), "f.json"),
                       doctest::Contains("f.json: an identity record must be a JSON object"),
                       kiln::IntegrityError);
  // Unknown keys are tolerated; non-string provenance is kept in JSON spelling.
  auto extra = good;
  extra["future_field"] = 3;
  extra["provenance"] = {{"jobs", 4}};
  CHECK(kiln::artifact::artifact_identity_from_json(extra, "f").provenance.at("jobs") == "4");
}
