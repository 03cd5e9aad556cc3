// kiln doctor reports the toolchain exactly as a build finds it (Runtime::toolchain): the same
// search for nvcc, the same version text, the host compiler, the JIT libraries.
#include <doctest/doctest.h>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "support/build_recipe.hpp"
#include "support/fixtures.hpp"
#include "support/checks.hpp"

using kiln::test::run_kiln;
using kiln::test::TempDir;
using nlohmann::json;

namespace {

using kiln::test::contains;

}  // namespace

TEST_CASE("cli: doctor looks for nvcc where a build does (KILN_CUDA_FALLBACK_DIR included)") {
  TempDir dir;
  const std::map<std::string, std::string> env = {{"KILN_CACHE_DIR", (dir / "cache").string()},
                                                  {"KILN_DEVICE", "sm_90"},
                                                  {"KILN_NVCC", ""},
                                                  {"CUDA_HOME", ""},
                                                  {"CUDA_PATH", ""},
                                                  {"PATH", "/usr/bin:/bin"},
                                                  {"KILN_CUDA_FALLBACK_DIR", "/nonexistent"}};
  auto result = run_kiln({"doctor", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json nvcc = json::parse(result.out)["toolchain"]["nvcc"];
  CHECK(nvcc["found"] == false);
  CHECK(contains(nvcc["detail"].get<std::string>(), "/nonexistent/bin/nvcc (missing)"));
  result = run_kiln({"doctor"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.out, "  nvcc: not found (prepared artifacts still load): nvcc not found; looked at:"));
}

TEST_CASE("cli: doctor names the nvcc, host compiler and cmake a build would use, with nvcc's release") {
  kiln::test::BuildRecipeDir fx;
  const auto nvcc = fx.script("nvcc", "echo 'Cuda compilation tools, release 13.9, V13.9.99'\n"
                                      "echo 'Build cuda_13.9.r13.9/compiler.99_0'\n");
  const auto cxx = fx.script("cxx", "echo 'c++ (kiln test) 99.1'\n");
  auto env = fx.cli_env();
  env["KILN_NVCC"] = nvcc.string();
  env["KILN_HOST_CXX"] = cxx.string();
  env["KILN_CMAKE"] = fx.script("cmake", "echo 'cmake version 9.8.7'\n").string();
  const auto result = run_kiln({"doctor", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json toolchain = json::parse(result.out)["toolchain"];
  CHECK(toolchain["nvcc"]["found"] == true);
  CHECK(toolchain["nvcc"]["path"] == nvcc.string());
  CHECK(toolchain["nvcc"]["version"] == "Build cuda_13.9.r13.9/compiler.99_0");
  CHECK(toolchain["nvcc"]["release"] == "13.9.99");
  CHECK(toolchain["host_compiler"]["path"] == cxx.string());
  CHECK(toolchain["host_compiler"]["version"] == "c++ (kiln test) 99.1");
  CHECK(toolchain["nvrtc"].contains("searched"));
  CHECK(toolchain["cmake"]["found"] == true);  // the fixture's counting wrapper
  CHECK(toolchain["cmake"]["path"] == env["KILN_CMAKE"]);
  CHECK(toolchain["cmake"]["version"] == "cmake version 9.8.7");
  CHECK_FALSE(boost::filesystem::exists(fx.cache() / "toolchain.json"));  // doctor writes nothing
}

TEST_CASE("cli: doctor reports the remote caches: none, one that does not answer, a configuration builds refuse") {
  TempDir dir;
  std::map<std::string, std::string> env = {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_DEVICE", "sm_90"}};

  env["KILN_REMOTE"] = "off";
  auto result = run_kiln({"doctor", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  json remotes = json::parse(result.out)["remotes"];
  CHECK(remotes["config_file"].is_null());
  CHECK(remotes["remotes"].empty());
  result = run_kiln({"doctor"}, env);
  CHECK(contains(result.out, "remote caches:\n  config       (none)\n  remotes      none (set KILN_REMOTE"));

  // Port 1 of the loopback refuses at once: the remote is down, and doctor still succeeds.
  env["KILN_REMOTE"] = "http://127.0.0.1:1/kiln;read-only;connect-timeout=2";
  result = run_kiln({"doctor", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  remotes = json::parse(result.out)["remotes"];
  REQUIRE(remotes["remotes"].size() == 1);
  CHECK(remotes["remotes"][0]["url"] == "http://127.0.0.1:1/kiln");
  CHECK(remotes["remotes"][0]["read_only"] == true);
  CHECK(remotes["remotes"][0]["state"] == "down");
  CHECK_FALSE(remotes["remotes"][0]["detail"].get<std::string>().empty());
  CHECK(remotes["accept_unsigned"] == false);
  result = run_kiln({"doctor"}, env);
  CHECK(contains(result.out, "  remote       http://127.0.0.1:1/kiln (read-only): down -- "));
  CHECK(contains(result.out, "  trusted key  none: entries are taken only where the store pins a fleet root"));
  CHECK(contains(result.out, "  signing key  none: remotes are only read, unless a spec says read-write"));
  // Without a key, only accept-unsigned lets entries in: said, checked for damage only.
  env["KILN_REMOTE_ACCEPT_UNSIGNED"] = "yes";
  result = run_kiln({"doctor", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["remotes"]["accept_unsigned"] == true);
  result = run_kiln({"doctor"}, env);
  CHECK(contains(result.out, "  trusted key  none, accept-unsigned: remote entries are checked for damage only"));
  env.erase("KILN_REMOTE_ACCEPT_UNSIGNED");

  // What a build would refuse is reported with its error, not raised.
  env["KILN_REMOTE"] = "http://127.0.0.1:1/kiln;colour=blue";
  result = run_kiln({"doctor", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json error = json::parse(result.out)["remotes"]["error"];
  CHECK(error["kind"] == "usage");
  CHECK(contains(error["message"].get<std::string>(), "colour"));
  result = run_kiln({"doctor"}, env);
  CHECK(result.exit_code == 0);
  CHECK(contains(result.out, "remote caches: "));
  CHECK(contains(result.out, "colour"));
  CHECK(contains(result.out, "builds refuse to start until this is fixed"));
}
