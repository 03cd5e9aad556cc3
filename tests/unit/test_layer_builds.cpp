// Builds and read-only layers: a vendor layer's entry built from the same inputs serves a build
// (and ensure) as it serves loads; nothing is compiled and nothing is written to either store.
#include <doctest/doctest.h>

#include <sstream>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "support/build_recipe.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using namespace kiln::test;
using nlohmann::json;

namespace {

// Every path under `root` (files and directories): what "nothing was written" is checked against.
std::vector<std::string> paths_under(const fs::path &root) {
  std::vector<std::string> out;
  if (!fs::exists(root)) return out;
  for (fs::recursive_directory_iterator it(root), end; it != end; ++it) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("layer builds: a read-only layer's current entry for the same inputs serves build, plan and ensure; "
          "changed inputs build in the writable cache" * kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;  // its cache becomes the robot's vendor layer
  auto result = run_kiln({"build", fx.recipe_file().string(), "--json"}, fx.cli_env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string key = json::parse(result.out)["content_key"];
  const fs::path vendor = fx.cache();
  const auto vendor_before = paths_under(vendor);

  TempDir robot;
  auto env = fx.cli_env();
  env["KILN_STORE_PATH"] = vendor.string();
  env["KILN_CACHE_DIR"] = (robot / "cache").string();
  const fs::path nvcc_log = fx.cache().parent_path() / "nvcc.log";
  // The compiler calls (-c, --shared) in the log; a cache's first use also probes --version.
  const auto compiles = [&] {
    std::string calls;
    std::istringstream log(fs::exists(nvcc_log) ? read_text(nvcc_log) : std::string());
    for (std::string line; std::getline(log, line);) {
      if (line.rfind("-c ", 0) == 0 || line.rfind("--shared", 0) == 0) calls += line + "\n";
    }
    return calls;
  };
  const std::string compiled_before = compiles();

  result = run_kiln({"build", fx.recipe_file().string(), "--plan", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json plan = json::parse(result.out);
  CHECK(plan["state"] == "cached");
  CHECK(plan["source"] == "layer " + vendor.string());
  CHECK(plan["content_key"] == key);

  result = run_kiln({"build", fx.recipe_file().string(), "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json built = json::parse(result.out);
  CHECK(built["outcome"] == "hit");
  CHECK(built["content_key"] == key);
  CHECK(built["layer"] == vendor.string());
  CHECK(fs::path(built["entry"].get<std::string>()).parent_path().parent_path() == vendor / "consumers" / "build-tests");

  result = run_kiln({"ensure", fx.recipe_file().string(), "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json ensured = json::parse(result.out);
  CHECK(ensured["resolution"]["content_key"] == key);
  CHECK(ensured["resolution"]["store"] == vendor.string());

  CHECK(compiles() == compiled_before);  // nothing compiled
  CHECK(paths_under(robot / "cache" / "consumers") == std::vector<std::string>{});
  CHECK(paths_under(vendor) == vendor_before);

  // Changed inputs: the layer's entry no longer serves; the build goes to the writable cache.
  fx.edit("values.txt", "3", "4");
  result = run_kiln({"build", fx.recipe_file().string(), "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json rebuilt = json::parse(result.out);
  CHECK(rebuilt["outcome"] == "built");
  CHECK(rebuilt["layer"].is_null());
  CHECK(rebuilt["content_key"] != key);
  CHECK(paths_under(vendor) == vendor_before);
}
