// A plugin entry's archs are a claim its file must back (src/artifact/arch_claims.hpp): kiln publish
// records what the file's fat binaries hold when no --arch is given, refuses an arch the file
// does not hold and a host-only claim for a file with device code (exit 6, listing what the file
// holds), cross-checks the build stamp. (Import and remote fetch: test_bundle.cpp; kiln verify:
// test_verify.cpp.)
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/runtime.hpp>
#include <kiln/stamp.h>

#include "artifact/stamp.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"
#include "support/preconditions.hpp"
#include "support/test_plugins.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;
using kiln::test::run_kiln;
using kiln::test::TempDir;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

// The example plugin is nvcc-built (sm_90 SASS + compute_90 PTX) except in a build without
// nvcc, where it is host code (kiln::test::example_is_host_code).
using kiln::test::example_is_host_code;

std::map<std::string, std::string> claims_env(const fs::path &cache, const std::string &device = "sm_90") {
  return {{"KILN_CACHE_DIR", cache.string()}, {"KILN_DEVICE", device}, {"KILN_STORE_PATH", ""}};
}

std::vector<std::string> publish_args(const std::string &name, const std::string &file, std::vector<std::string> extra) {
  std::vector<std::string> args{"publish", "--consumer", "tests", "--name", name, "--artifact", file, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

json recorded_archs(const std::string &entry_dir) {
  return json::parse(kiln::test::read_text(fs::path(entry_dir) / "identity.json"))["archs"];
}

bool no_manifest_in(const fs::path &cache) { return !fs::exists(cache / "consumers" / "tests" / "manifest.json"); }

}  // namespace

TEST_CASE("arch claims: publish --arch naming an arch the file does not hold is refused (exit 6) listing what it holds" *
          kiln::test::skip_if(example_is_host_code)) {
  TempDir dir;
  const auto result = run_kiln(publish_args("example", KILN_TEST_PLUGIN_EXAMPLE, {"--arch", "sm_80"}), claims_env(dir / "cache"));
  CHECK(result.exit_code == 6);
  CHECK(has(result.err, "holds no device code for sm_80"));
  CHECK(has(result.err, "SASS sm_90; PTX compute_90"));
  CHECK(has(result.err, KILN_TEST_PLUGIN_EXAMPLE));
  CHECK(no_manifest_in(dir / "cache"));
}

TEST_CASE("arch claims: publish without --arch records the archs the file holds; a held subset is accepted" *
          kiln::test::skip_if(example_is_host_code)) {
  TempDir dir;
  auto result = run_kiln(publish_args("example", KILN_TEST_PLUGIN_EXAMPLE, {}), claims_env(dir / "cache"));
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(recorded_archs(json::parse(result.out)["entry"]) == json{"compute_90", "sm_90"});
  result = run_kiln(publish_args("sass", KILN_TEST_PLUGIN_EXAMPLE, {"--arch", "sm_90"}), claims_env(dir / "cache"));
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(recorded_archs(json::parse(result.out)["entry"]) == json{"sm_90"});
  // The file's archs decide where it loads: a declared sm_87 refuses it.
  result = run_kiln({"load", "tests", "example"}, claims_env(dir / "cache", "sm_87"));
  CHECK(result.exit_code == 4);
  CHECK(has(result.err, "cuda_arch"));
}

TEST_CASE("arch claims: publish without --arch of a file with no device code records it host-only") {
  TempDir dir;
  const auto result = run_kiln(publish_args("host", KILN_TEST_PLUGIN_HOST_ONLY, {}), claims_env(dir / "cache"));
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(recorded_archs(json::parse(result.out)["entry"]) == json::array());
}

TEST_CASE("arch claims: a host-only file claiming an arch, and --arch none of a file with device code, are refused") {
  TempDir dir;
  auto result = run_kiln(publish_args("host", KILN_TEST_PLUGIN_HOST_ONLY, {"--arch", "sm_90"}), claims_env(dir / "cache"));
  CHECK(result.exit_code == 6);
  CHECK(has(result.err, "holds no device code for sm_90"));
  CHECK(has(result.err, "the file holds no device code"));
  if (!example_is_host_code()) {
    result = run_kiln(publish_args("example", KILN_TEST_PLUGIN_EXAMPLE, {"--arch", "none"}), claims_env(dir / "cache"));
    CHECK(result.exit_code == 6);
    CHECK(has(result.err, "holds device code (SASS sm_90; PTX compute_90)"));
    CHECK(has(result.err, "host-only"));
  }
  CHECK(no_manifest_in(dir / "cache"));
}

TEST_CASE("arch claims: a C++ PublishRequest without archs takes the file's, so a declared sm_87 refuses the entry" *
          kiln::test::skip_if(example_is_host_code)) {
  TempDir dir;
  {
    Runtime runtime(kiln::test::store_options(dir));
    const PublishResult published = kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "solver");
    CHECK(recorded_archs(published.entry_dir) == json{"compute_90", "sm_90"});
  }
  Runtime orin(kiln::test::store_options(dir, std::string("sm_87,integrated=1")));
  const std::string message = error_of<IncompatibleError>([&] { orin.load("tests", "solver"); });
  CHECK(has(message, "cuda_arch"));
}

TEST_CASE("arch claims: a C++ PublishRequest with host_only is refused for a file with device code and for listed archs") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  PublishRequest request;
  request.consumer = "tests";
  request.name = "host";
  request.artifact_file = KILN_TEST_PLUGIN_HOST_ONLY;
  request.host_only = true;
  CHECK(recorded_archs(runtime.publish(request).entry_dir) == json::array());
  request.archs = {Arch::parse("sm_90")};
  CHECK(has(error_of<UsageError>([&] { runtime.publish(request); }), "contradict"));
  if (example_is_host_code()) {
    MESSAGE("host_only for a file with device code is not checked: " << *example_is_host_code());
    return;
  }
  request.archs.clear();
  request.name = "example";
  request.artifact_file = KILN_TEST_PLUGIN_EXAMPLE;
  CHECK(has(error_of<IntegrityError>([&] { runtime.publish(request); }), "holds device code (SASS sm_90; PTX compute_90)"));
  CHECK_THROWS_AS(runtime.resolve("tests", "example"), NotFoundError);
}

TEST_CASE("arch claims: a build stamp naming an arch the fat binaries do not hold is refused" *
          kiln::test::skip_if(example_is_host_code)) {
  TempDir dir;
  std::string bytes = kiln::test::read_text(KILN_TEST_PLUGIN_EXAMPLE);
  const artifact::FileStamp stamp = artifact::find_stamp(bytes, "example");
  REQUIRE(stamp.archs == "900");
  // sm_100: above every arch the file holds (code compiled for compute_80 may be sm_90 SASS, so
  // a lower one would be no contradiction).
  std::memcpy(&bytes[stamp.offset + offsetof(kiln_build_stamp, archs)], "1000", 5);
  const fs::path file = dir / "libpatched.so";
  kiln::test::write_text(file, bytes);
  Runtime runtime(kiln::test::store_options(dir));
  const std::string message = error_of<IntegrityError>([&] { kiln::test::publish_plugin(runtime, file.string()); });
  CHECK(has(message, "__CUDA_ARCH_LIST__ \"1000\""));
  CHECK(has(message, "SASS sm_90; PTX compute_90"));
  CHECK(no_manifest_in(dir / "cache"));
}
