// kiln-trajopt-demo --plugin FILE publishes the file into a scratch store of its own: an entry the
// user keeps under the demo's names (kiln-trajopt/iiwa14-N64) is never replaced, and the scratch
// store is gone when the demo ends. A plugin offering kiln.robotmodel/1 is judged with its own model,
// whatever robot it solves for.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>

#include "support/fixtures.hpp"

namespace fs = boost::filesystem;
using kiln::test::shell_quote;

TEST_CASE("trajopt demo: --plugin FILE publishes into a scratch store, never into the user's cache") {
  kiln::test::TempDir dir;
  const char *carried = std::getenv("KILN_TRAJOPT_PLUGIN_IIWA14");  // a build carried elsewhere
  const std::string plugin = carried != nullptr && *carried != '\0' ? carried : KILN_TRAJOPT_PLUGIN_IIWA14;
  kiln::RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  options.declared_device = "sm_90";
  std::string users_key;
  {
    // The user's own entry under the demo's names: the same file, another toolkit, another key.
    kiln::Runtime runtime(options);
    kiln::PublishRequest request;
    request.consumer = "kiln-trajopt";
    request.name = "iiwa14-N64";
    request.artifact_file = plugin;
    request.cuda_toolkit_version = 12080;
    users_key = runtime.publish(request).content_key;
  }
  const auto result = kiln::test::run_shell(
      "env KILN_CACHE_DIR=" + shell_quote(options.cache_dir) + " KILN_STORE_PATH= KILN_DEVICE=sm_90 " +
      shell_quote(KILN_TRAJOPT_DEMO) + " --plugin " + shell_quote(plugin) + " --host-problems 1");
  CHECK_MESSAGE(result.exit_code == 0, result.out << result.err);
  CHECK(result.out.find("a scratch store") != std::string::npos);
  CHECK(result.out.find("judged with: the plugin's own model (kiln.robotmodel/1: lbr_iiwa, iiwa14.urdf") != std::string::npos);
  CHECK(result.out.find("CPU reference (Eigen, double, 1 thread): success 1 / 1") != std::string::npos);
  kiln::Runtime runtime(options);
  CHECK(runtime.resolve("kiln-trajopt", "iiwa14-N64").content_key == users_key);
  std::size_t entries = 0;
  for (fs::directory_iterator it(dir / "cache" / "consumers" / "kiln-trajopt" / "store"), end; it != end; ++it) ++entries;
  CHECK(entries == 1);
  // The scratch store named in the output is removed at exit.
  const std::size_t at = result.out.find("a scratch store ");
  REQUIRE(at != std::string::npos);
  const std::string rest = result.out.substr(at + 16);
  const std::string scratch = rest.substr(0, rest.find(' '));
  CHECK(!scratch.empty());
  CHECK_FALSE(fs::exists(scratch));
}

TEST_CASE("trajopt demo: a plugin of another robot (Panda) is judged with its own model through kiln.robotmodel/1") {
  kiln::test::TempDir dir;
  const char *carried = std::getenv("KILN_TRAJOPT_PLUGIN_PANDA");
  const std::string plugin = carried != nullptr && *carried != '\0' ? carried : KILN_TRAJOPT_PLUGIN_PANDA;
  const auto result = kiln::test::run_shell("env KILN_CACHE_DIR=" + shell_quote((dir / "cache").string()) +
                                            " KILN_STORE_PATH= KILN_DEVICE=sm_90 " + shell_quote(KILN_TRAJOPT_DEMO) +
                                            " --plugin " + shell_quote(plugin) + " --host-problems 2");
  INFO(result.out << result.err);
  CHECK(result.exit_code == 0);
  CHECK(result.out.find("judged with: the plugin's own model (kiln.robotmodel/1: panda, panda.urdf") != std::string::npos);
  CHECK(result.out.find("plugin (host path): success 2 / 2") != std::string::npos);
  // The demo's compiled reference is the iiwa14's: it does not pretend to solve the Panda's problems.
  CHECK(result.out.find("CPU reference: not compared") != std::string::npos);
}
