// The kiln CLI as a user runs it: verbs, --json, documented exit codes.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"

using kiln::test::run_kiln;
using kiln::test::TempDir;
using nlohmann::json;

namespace {

std::map<std::string, std::string> env_for(const TempDir &dir, const std::string &device = "sm_90") {
  return {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_DEVICE", device}, {"KILN_STORE_PATH", ""}};
}

}  // namespace

TEST_CASE("cli: doctor --json reports driver state, declared device, stores and toolchain") {
  TempDir dir;
  const auto result = run_kiln({"doctor", "--json"}, env_for(dir, "sm_87,driver=12060"));
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json out = json::parse(result.out);
  CHECK(out["driver"]["state"].is_string());
  CHECK(out["driver"]["declared"]["arch"] == "sm_87");
  CHECK(out["driver"]["declared"]["integrated"] == true);
  CHECK(out["driver"]["declared"]["driver_version"] == 12060);
  CHECK(out["stores"].back()["root"] == (dir / "cache").string());
  CHECK(out["stores"].back()["writable"] == true);
  CHECK(out["toolchain"]["nvcc"].contains("found"));
}

TEST_CASE("cli: publish, ls, show and load with --json; exit codes for each refusal") {
  TempDir dir;
  const auto env = env_for(dir);
  auto result = run_kiln({"publish", "--consumer", "tests", "--name", "example", "--artifact",
                          KILN_TEST_PLUGIN_EXAMPLE, "--arch", "sm_90", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string key = json::parse(result.out)["content_key"];

  result = run_kiln({"load", "tests", "example", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  json loaded = json::parse(result.out);
  CHECK(loaded["resolution"]["content_key"] == key);
  CHECK(loaded["interfaces"][0] == "kiln.example/1");
  CHECK(loaded["compatibility"]["image"] == "sm_90");
  CHECK(loaded["timings"]["total_ms"].get<double>() > 0.0);

  result = run_kiln({"load", "tests", "example"}, env);
  CHECK(result.exit_code == 0);
  CHECK(result.out.find("timings (ms)") != std::string::npos);

  result = run_kiln({"ls", "--json"}, env);
  REQUIRE(result.exit_code == 0);
  CHECK(json::parse(result.out)[0]["name"] == "example");

  result = run_kiln({"show", "tests", "example", "--json"}, env);
  REQUIRE(result.exit_code == 0);
  CHECK(json::parse(result.out)["checks"][0]["compatibility"]["ok"] == true);

  SUBCASE("not found: 3") {
    result = run_kiln({"load", "tests", "missing", "--json"}, env);
    CHECK(result.exit_code == 3);
    CHECK(json::parse(result.out)["error"]["kind"] == "not_found");
  }
  SUBCASE("bad name: 2") {
    result = run_kiln({"load", "..", "example"}, env);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("\"..\"") != std::string::npos);
  }
  SUBCASE("usage: 2") { CHECK(run_kiln({"load"}, env).exit_code == 2); }
  SUBCASE("incompatible: 4, reasons in JSON") {
    result = run_kiln({"load", "tests", "example", "--json"}, env_for(dir, "sm_87"));
    CHECK(result.exit_code == 4);
    const json error = json::parse(result.out)["error"];
    CHECK(error["reasons"][0]["field"] == "cuda_arch");
    CHECK(error["reasons"][0]["recorded"] == "sm_90");
    CHECK(error["reasons"][0]["current"] == "sm_87");
  }
  SUBCASE("integrity: 6") {
    const std::string file = loaded["resolution"]["file"];
    kiln::test::write_text(file, "truncated");
    CHECK(run_kiln({"load", "tests", "example"}, env).exit_code == 6);
  }
  SUBCASE("abi: 5") {
    // A plugin offering only ABI 2.0 is refused when published (its stamp says so), not at load.
    result = run_kiln({"publish", "--consumer", "tests", "--name", "abi2", "--artifact", KILN_TEST_PLUGIN_ABI2,
                       "--arch", "none"}, env);
    CHECK(result.exit_code == 5);
    CHECK(result.err.find("offers plugin ABI up to 2.0") != std::string::npos);
    CHECK(run_kiln({"load", "tests", "abi2"}, env).exit_code == 3);
  }
  SUBCASE("bad KILN_DEVICE: 2") {
    result = run_kiln({"load", "tests", "example"}, env_for(dir, "sm_9x"));
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("sm_9x") != std::string::npos);
  }
}
