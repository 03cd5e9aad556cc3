// The CLI as a person and a script meet it: usage errors in --json, a missing recipe is "not
// found", doctor tries the writable cache, device advice only where it helps, archs the
// toolchain cannot build refused at plan time, NVRTC option errors as usage errors, `kiln ls`
// past a damaged manifest, build progress on stderr (plain lines, JSON lines, --quiet), and
// the fix for a cache that cannot be written, from every verb that writes it.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "support/build_recipe.hpp"
#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using kiln::test::cli_env;
using kiln::test::contains;
using kiln::test::run_kiln;
using kiln::test::TempDir;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

int count_of(const std::string &text, const std::string &what) {
  int count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

// A one-unit host-only nvcc recipe (the plugin of examples/).
fs::path fma_recipe(const fs::path &dir, const std::string &archs = "\"sm_90\"") {
  fs::create_directories(dir);
  fs::copy_file(fs::path(KILN_TEST_SOURCE_DIR) / "examples" / "plugin" / "plugin.cpp", dir / "plugin.cpp",
                fs::copy_options::overwrite_existing);
  kiln::test::write_text(dir / "fma.json", R"({"schema": 1, "consumer": "example", "name": "fma", "sources": ["plugin.cpp"],
 "archs": [)" + archs + R"(], "artifact": "libexample_fma.so"})");
  return dir / "fma.json";
}

fs::path nvrtc_recipe(const fs::path &dir, const std::string &arch, const std::string &flags) {
  fs::create_directories(dir);
  kiln::test::write_text(dir / "k.cu", "extern \"C\" __global__ void scale(float a, float *x) { x[threadIdx.x] *= a; }\n");
  kiln::test::write_text(dir / "k.json", R"({"schema": 1, "consumer": "jit", "name": "k", "backend": "nvrtc",
 "sources": ["k.cu"], "archs": [")" + arch + R"("], "flags": [)" + flags + R"(], "kernels": ["scale"], "artifact": "k.images"})");
  return dir / "k.json";
}

}  // namespace

TEST_CASE("cli: a missing recipe is not found (exit 3) and a usage error is a JSON error object under --json") {
  TempDir dir;
  const auto env = cli_env(dir / "cache");
  for (const char *verb : {"build", "ensure"}) {
    CAPTURE(verb);
    auto result = run_kiln({verb, (dir / "absent.json").string(), "--json"}, env);
    CHECK(result.exit_code == 3);
    const json error = json::parse(result.out)["error"];
    CHECK(error["kind"] == "not_found");
    CHECK(error["exit_code"] == 3);
    CHECK(contains(error["message"].get<std::string>(), (dir / "absent.json").string()));
  }
  auto result = run_kiln({"build", (dir / "absent.json").string(), "--json", "--no-such-option"}, env);
  CHECK(result.exit_code == 2);
  const json error = json::parse(result.out)["error"];
  CHECK(error["kind"] == "usage");
  CHECK(error["exit_code"] == 2);
  CHECK(contains(error["message"].get<std::string>(), "--no-such-option"));
  result = run_kiln({"build", (dir / "absent.json").string(), "--no-such-option"}, env);  // text on stderr only
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  CHECK(contains(result.err, "--no-such-option"));
  result = run_kiln({"publish", "--json", "--consumer", "c", "--name", "n", "--arch", "none", "--artifact",
                     (dir / "absent.so").string()}, env);
  CHECK(result.exit_code == 3);
  CHECK(json::parse(result.out)["error"]["kind"] == "not_found");
}

TEST_CASE("cli: doctor tries the writable cache and says whether it takes a file") {
  TempDir dir;
  auto result = run_kiln({"doctor", "--json"}, cli_env(dir / "cache"));
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  json stores = json::parse(result.out)["stores"];
  REQUIRE(stores.size() >= 1);
  CHECK(stores[0]["writable"] == true);
  CHECK(stores[0]["check"]["writable"] == true);
  CHECK(stores[0]["check"]["exists"] == false);
  for (fs::directory_iterator it(dir.path()), end; it != end; ++it) {
    CHECK_MESSAGE(it->path().filename().string().rfind(".kiln-doctor-", 0) != 0, "probe left: " << it->path());
  }

  // A cache under a regular file cannot be created, as root too.
  kiln::test::write_text(dir / "file", "x");
  result = run_kiln({"doctor", "--json"}, cli_env(dir / "file" / "cache"));
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  stores = json::parse(result.out)["stores"];
  CHECK(stores[0]["check"]["writable"] == false);
  CHECK(contains(stores[0]["check"]["detail"].get<std::string>(), "KILN_CACHE_DIR"));
  result = run_kiln({"doctor"}, cli_env(dir / "file" / "cache"));
  CHECK(contains(result.out, "builds and publishes fail; loads from the layers still work"));
}

TEST_CASE("cli: the advice to declare a device appears once, and not once one is declared") {
  TempDir dir;
  auto env = cli_env(dir / "cache");
  env["KILN_LIBCUDA"] = (dir / "no-driver" / "libcuda.so.1").string();  // no driver, on any machine
  env["KILN_DEVICE"] = "";
  auto result = run_kiln({"doctor"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(count_of(result.out + result.err, "KILN_DEVICE=sm_87") == 1);
  env["KILN_DEVICE"] = "sm_90";
  result = run_kiln({"doctor"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(count_of(result.out + result.err, "KILN_DEVICE=sm_87") == 0);
  CHECK(contains(result.out, "declared device (KILN_DEVICE)"));
}

TEST_CASE("cli: archs nvcc cannot build are refused at plan time with the list it can" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  TempDir dir;
  const auto env = cli_env(dir / "cache");
  const fs::path recipe = fma_recipe(dir / "r", "\"sm_91\"");
  auto result = run_kiln({"build", recipe.string(), "--plan"}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "cannot build sm_91"));
  CHECK(contains(result.err, "sm_90"));  // the list it can
  CHECK(contains(result.err, recipe.string()));
  result = run_kiln({"build", recipe.string(), "--plan", "--arch", "sm_90,compute_90"}, env);
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  CHECK(!fs::exists(dir / "cache" / "consumers"));  // refused before anything was written
}

TEST_CASE("cli: NVRTC refuses an arch at plan time, and an option it does not take is a usage error" *
          kiln::test::skip_if(kiln::test::no_nvrtc)) {
  TempDir dir;
  const auto env = cli_env(dir / "cache");
  auto result = run_kiln({"build", nvrtc_recipe(dir / "a", "sm_91", "").string(), "--plan"}, env);
  CHECK(result.exit_code == 2);
  CHECK(contains(result.err, "NVRTC"));
  CHECK(contains(result.err, "cannot build sm_91"));
  result = run_kiln({"build", nvrtc_recipe(dir / "b", "sm_90", "\"--no-such-nvrtc-option\"").string(), "--json"}, env);
  CHECK(result.exit_code == 2);
  const json error = json::parse(result.out)["error"];
  CHECK(error["kind"] == "usage");
  CHECK(contains(error["message"].get<std::string>(), "--no-such-nvrtc-option"));
  CHECK(contains(error["message"].get<std::string>(), "fix \"flags\""));
}

TEST_CASE("cli: kiln ls lists the other consumers past a damaged manifest, and names it damaged") {
  TempDir dir;
  const auto env = cli_env(dir / "cache");
  for (const char *consumer : {"alpha", "beta"}) {
    const auto result = run_kiln({"publish", "--consumer", consumer, "--name", "fma", "--arch", "none", "--artifact",
                                  KILN_TEST_PLUGIN_HOST_ONLY}, env);
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  }
  kiln::test::write_text(dir / "cache" / "consumers" / "alpha" / "manifest.json", "{ torn");
  auto result = run_kiln({"ls", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json items = json::parse(result.out);
  REQUIRE(items.size() == 2);
  CHECK(items[0]["consumer"] == "alpha");
  CHECK(items[0].contains("damaged"));
  CHECK(items[1]["consumer"] == "beta");
  CHECK(items[1]["name"] == "fma");
  CHECK_FALSE(items[1].contains("damaged"));
  result = run_kiln({"ls"}, env);
  CHECK(contains(result.out, "alpha/  DAMAGED manifest"));
  CHECK(contains(result.out, "beta/fma"));
  result = run_kiln({"ls", "alpha"}, env);  // asked for by name: the damage is the answer
  CHECK(result.exit_code == 6);
}

TEST_CASE("cli: build progress on stderr: plain lines, JSON lines with --json, nothing with --quiet" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  TempDir dir;
  const auto env = cli_env(dir / "cache");
  const fs::path recipe = fma_recipe(dir / "r");
  auto result = run_kiln({"build", recipe.string()}, env);  // stderr is a file here: plain lines
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.err, "kiln: example/fma: 1 unit(s) to compile"));
  CHECK(contains(result.err, "kiln: compiled plugin.cpp in "));
  CHECK(contains(result.err, "[1/1]"));
  CHECK(contains(result.err, "kiln: linked   libexample_fma.so in "));
  CHECK(contains(result.err, "1 unit(s): 1 compiled, 0 cached; slowest plugin.cpp"));

  result = run_kiln({"build", recipe.string(), "--json", "--force"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json built = json::parse(result.out);  // stdout stays one JSON object
  REQUIRE(built["units"].size() == 1);
  CHECK(built["units"][0]["cached"] == false);  // --force compiled it (the same content key: "reused")
  std::istringstream lines(result.err);
  std::vector<json> events;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) events.push_back(json::parse(line));
  }
  REQUIRE(events.size() >= 5);
  CHECK(events.front()["event"] == "units_queued");
  CHECK(events.front()["total"] == 1);
  bool unit_finished = false;
  for (const auto &event : events) {
    if (event["event"] == "unit_finished") {
      unit_finished = true;
      CHECK(event["name"] == "plugin.cpp");
      CHECK(event["done"] == 1);
      CHECK(event["total"] == 1);
      CHECK(event["seconds"].get<double>() > 0);
    }
  }
  CHECK(unit_finished);
  CHECK(events.back()["event"] == "finished");
  CHECK(events.back()["compiled"] == 1);
  CHECK(events.back()["slowest"]["name"] == "plugin.cpp");

  result = run_kiln({"build", recipe.string(), "--force", "--quiet"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(result.err.empty());
  result = run_kiln({"build", recipe.string()}, env);  // a hit: no progress, no summary
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(contains(result.out, "hit example/fma"));
  CHECK(result.err.empty());
}

TEST_CASE("cli: every verb that writes the cache says to set KILN_CACHE_DIR when it cannot") {
  TempDir dir;
  // As root permissions do not bite: the verbs run as uid 65534 then, through setpriv.
  std::string as_user;
  if (::geteuid() == 0) {
    if (kiln::test::run_shell("command -v setpriv").exit_code != 0) {
      MESSAGE("SKIPPED the unwritable cache: running as root, and no setpriv to run kiln as another user");
      return;
    }
    as_user = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  // A bundle to import, exported from a cache that can be written.
  const auto writable_env = cli_env(dir / "writable");
  auto result = run_kiln({"publish", "--consumer", "alpha", "--name", "fma", "--arch", "none", "--artifact",
                          KILN_TEST_PLUGIN_HOST_ONLY}, writable_env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  result = run_kiln({"export", "--consumer", "alpha", "-o", (dir / "alpha.kbundle").string()}, writable_env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);

  const fs::path cache = dir / "cache";
  fs::create_directories(cache);
  REQUIRE(::chmod(cache.c_str(), 0500) == 0);
  const std::vector<std::vector<std::string>> verbs = {
      {"publish", "--consumer", "alpha", "--name", "fma", "--arch", "none", "--artifact", KILN_TEST_PLUGIN_HOST_ONLY},
      {"import", (dir / "alpha.kbundle").string(), "--allow-unsigned"},
      {"gc", "--max-size", "1M"}};
  for (const auto &args : verbs) {
    CAPTURE(args[0]);
    std::string command = as_user + "env";
    for (const auto &[name, value] : cli_env(cache)) command += " " + kiln::test::shell_quote(name + "=" + value);
    command += " " + kiln::test::kiln_cli_command();
    for (const auto &arg : args) command += " " + kiln::test::shell_quote(arg);
    result = kiln::test::run_shell(command + " --json");
    CHECK(result.exit_code == 1);
    const json error = json::parse(result.out)["error"];
    CHECK(error["exit_code"] == 1);  // an I/O error (docs/cli.md "Exit codes")
    const std::string message = error["message"].get<std::string>();
    CHECK_MESSAGE(contains(message, "the writable store " + cache.string() + " (from KILN_CACHE_DIR) cannot be written"), message);
    CHECK_MESSAGE(contains(message, "set KILN_CACHE_DIR to a writable directory"), message);
    CHECK(fs::is_empty(cache));  // nothing partial left
  }
  REQUIRE(::chmod(cache.c_str(), 0755) == 0);
}
