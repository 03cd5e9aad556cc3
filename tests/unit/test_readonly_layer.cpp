// The robot's side of Jetson deployment: a vendor store on a read-only file system (a read-only
// bind mount in a private mount namespace), the writable cache absent and impossible to create,
// no toolchain. Loads, ensure (falling back to the prepared artifact), verify and gc work there,
// and nothing in the vendor layer changes.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <map>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "support/build_recipe.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/test_plugins.hpp"

using namespace kiln::test;
using nlohmann::json;

namespace {

std::optional<std::string> no_read_only_bind_mount() {
  TempDir probe;
  const std::string dir = probe.path().string();
  const auto result = run_shell("unshare -r -m sh -c 'mount --bind " + dir + " " + dir + " && mount -o remount,bind,ro " +
                                dir + " " + dir + " && ! touch " + dir + "/x 2>/dev/null'");
  if (result.exit_code == 0) return std::nullopt;
  return "a read-only bind mount in a private mount namespace (unshare -r -m) is not permitted here: " + result.err;
}

// Every path under `root` with its size and mtime: what "nothing changed" is checked against.
std::map<std::string, std::pair<std::uintmax_t, std::time_t>> sizes_and_mtimes(const fs::path &root) {
  std::map<std::string, std::pair<std::uintmax_t, std::time_t>> out;
  for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
    struct stat info {};
    REQUIRE(::lstat(it->path().c_str(), &info) == 0);
    out[it->path().string()] = {S_ISREG(info.st_mode) ? static_cast<std::uintmax_t>(info.st_size) : 0, info.st_mtime};
  }
  return out;
}

// `command` (a kiln command line, its arguments shell-quoted by the caller) run in a private
// mount namespace where `vendor` is mounted read-only over itself, with this environment and no
// toolchain on PATH.
CommandResult run_on_robot(const fs::path &vendor, const std::string &env, const std::string &command) {
  const std::string dir = vendor.string();
  return run_shell("unshare -r -m sh -c 'mount --bind " + dir + " " + dir + " && mount -o remount,bind,ro " + dir +
                   " " + dir + " && exec env PATH=/usr/bin:/bin CUDA_HOME=/nonexistent KILN_CUDA_FALLBACK_DIR=/nonexistent "
                   "KILN_NVCC=/nonexistent/nvcc KILN_STORE_PATH=" + dir + " KILN_CACHE_DIR=" + dir + "/no-cache " + env +
                   " " + kiln_cli_command() + " " + command + "'");
}

}  // namespace

TEST_SUITE("readonly") {

TEST_CASE("read-only layer: a signed bundle from the workstation imported into a vendor layer, mounted read-only "
          "with no writable cache: load (declared Orin), verify and gc work and the layer is unchanged" * kiln::test::skip_if(no_read_only_bind_mount)) {
  TempDir dir;
  const fs::path vendor = dir / "vendor";
  // The workstation: a plugin holding the Orin's exact SASS arch (sm_87, from the file), exported
  // as one signed bundle. A cross build has no nvcc: its file is host code, which loads anywhere.
  const std::map<std::string, std::string> workstation = {{"KILN_CACHE_DIR", (dir / "workstation").string()},
                                                          {"KILN_STORE_PATH", ""}};
  const auto published = run_kiln({"publish", "--consumer", "robot", "--name", "solver", "--artifact",
                                   KILN_TEST_PLUGIN_EXAMPLE_SM87, "--json"}, workstation);
  REQUIRE_MESSAGE(published.exit_code == 0, published.err);
  const std::string key = json::parse(published.out)["content_key"];
  const std::string keys = (dir / "vendor-key").string(), bundle = (dir / "robot.kbundle").string();
  auto step = run_kiln({"keygen", "-o", keys}, workstation);
  REQUIRE_MESSAGE(step.exit_code == 0, step.err);
  step = run_kiln({"export", "--consumer", "robot", "-o", bundle, "--sign", keys + ".key"}, workstation);
  REQUIRE_MESSAGE(step.exit_code == 0, step.err);
  // The robot image's build: the bundle imported into the directory that becomes its vendor layer.
  step = run_kiln({"import", bundle, "--into", vendor.string(), "--trust", keys + ".pub"}, workstation);
  REQUIRE_MESSAGE(step.exit_code == 0, step.err);
  const auto before = sizes_and_mtimes(vendor);

  auto result = run_on_robot(vendor, "KILN_DEVICE=sm_87,integrated=1", "load robot solver --json");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json loaded = json::parse(result.out);
  CHECK(loaded["resolution"]["content_key"] == key);
  CHECK(loaded["resolution"]["store"] == vendor.string());
  CHECK(loaded["resolution"]["store_writable"] == false);

  // The exact-SASS rule of Tegra: the same entry on a declared Thor (sm_110) is refused.
  result = run_on_robot(vendor, "KILN_DEVICE=sm_110,integrated=1", "load robot solver");
  if (const auto host_code = kiln::test::example_is_host_code()) {
    MESSAGE("the sm_110 refusal is not checked: " << *host_code);
  } else {
    CHECK(loaded["resolution"]["identity"]["archs"] == json{"sm_87"});
    CHECK(result.exit_code == 4);
  }

  result = run_on_robot(vendor, "KILN_DEVICE=sm_87,integrated=1", "verify --repair --json");
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["entries"] == 1);
  result = run_on_robot(vendor, "KILN_DEVICE=sm_87,integrated=1", "gc --max-size 0 --json");
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["entries_seen"] == 0);  // the cache is absent; layers are never collected

  CHECK(sizes_and_mtimes(vendor) == before);
  CHECK_FALSE(fs::exists(vendor / "no-cache"));
}

TEST_CASE("read-only layer: ensure with no toolchain loads the prepared artifact from the read-only layer and says "
          "so" * kiln::test::skip_if(no_read_only_bind_mount) * kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  auto result = run_kiln({"build", fx.recipe_file().string(), "--json"}, fx.cli_env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string key = json::parse(result.out)["content_key"];
  const fs::path vendor = fx.cache();
  const auto before = sizes_and_mtimes(vendor);

  result = run_on_robot(vendor, "KILN_DEVICE=sm_90 KILN_LOG=info", "ensure " + fx.recipe_file().string() + " --json -v");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["resolution"]["content_key"] == key);
  CHECK_MESSAGE(result.err.find("no toolchain") != std::string::npos, result.err);
  CHECK_MESSAGE(result.err.find("loading the prepared build-tests/two-units (" + key + ")") != std::string::npos,
                result.err);
  CHECK(sizes_and_mtimes(vendor) == before);
}

}  // TEST_SUITE
