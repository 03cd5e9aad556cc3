// A Module that ends gives its LoadReport back to its Runtime (load/report_pool.hpp), and the
// next load takes it instead of copying the resolution again. Whatever report a load gets, what
// it reports must be exactly what a fresh Runtime reports for the same artifact: another
// artifact's resolution, compatibility, plugin id or interfaces never show through.
#include <doctest/doctest.h>

#include <string>

#include <kiln/runtime.hpp>

#include "support/plugin_store.hpp"

using namespace kiln;
using namespace kiln::test;

namespace {

// The fields of two reports that describe the artifact (not the timings).
void check_same_report(const LoadReport &got, const LoadReport &fresh) {
  const Resolution &a = got.resolution, &b = fresh.resolution;
  CHECK(a.consumer == b.consumer);
  CHECK(a.name == b.name);
  CHECK(a.content_key == b.content_key);
  CHECK(a.file == b.file);
  CHECK(a.digest == b.digest);
  CHECK(a.size == b.size);
  CHECK(a.kind == b.kind);
  CHECK(a.updated == b.updated);
  CHECK(a.identity.archs.size() == b.identity.archs.size());
  CHECK(a.identity.cuda_toolkit_version == b.identity.cuda_toolkit_version);
  CHECK(a.identity.provenance == b.identity.provenance);
  CHECK(got.compatibility.ok == fresh.compatibility.ok);
  CHECK(got.compatibility.how == fresh.compatibility.how);
  CHECK(got.compatibility.image.has_value() == fresh.compatibility.image.has_value());
  CHECK(got.device.has_value() == fresh.device.has_value());
  CHECK(got.plugin_id == fresh.plugin_id);
  CHECK(got.plugin_version == fresh.plugin_version);
  CHECK(got.interfaces == fresh.interfaces);
  CHECK(got.abi_version == fresh.abi_version);
}

LoadReport fresh_report(const TempDir &dir, const std::string &name) {
  Runtime other(store_options(dir));
  return other.load("tests", name).report();
}

}  // namespace

TEST_CASE("warm reports: loads of different artifacts in turn each report their own, as a fresh Runtime does") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  // Two plugins (other ids, another arch list), a third entry of the first file (another toolkit).
  publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY, "a");
  publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "b", "sm_90");
  PublishRequest request;
  request.consumer = "tests";
  request.name = "c";
  request.artifact_file = KILN_TEST_PLUGIN_HOST_ONLY;
  request.cuda_toolkit_version = 12080;
  runtime.publish(request);
  const LoadReport a = fresh_report(dir, "a"), b = fresh_report(dir, "b"), c = fresh_report(dir, "c");
  REQUIRE(a.plugin_id != b.plugin_id);
  REQUIRE(a.compatibility.how != b.compatibility.how);

  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    for (const auto &[name, fresh] : {std::make_pair("a", &a), std::make_pair("b", &b), std::make_pair("c", &c),
                                      std::make_pair("a", &a), std::make_pair("a", &a), std::make_pair("b", &b)}) {
      CAPTURE(name);
      const Module module = runtime.load("tests", name);
      check_same_report(module.report(), *fresh);
    }
  }
  // Several alive at once (no report shared between live Modules), then each again.
  {
    const Module ma = runtime.load("tests", "a"), mb = runtime.load("tests", "b"), ma2 = runtime.load("tests", "a");
    check_same_report(ma.report(), a);
    check_same_report(mb.report(), b);
    check_same_report(ma2.report(), a);
    CHECK(&ma.report() != &ma2.report());
  }
  check_same_report(runtime.load("tests", "b").report(), b);
}

TEST_CASE("warm reports: a republished name reports the new entry; the device choice is checked again") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY, "x");
  { const Module first = runtime.load("tests", "x"); }
  publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "x", "sm_90");
  const LoadReport fresh = fresh_report(dir, "x");
  check_same_report(runtime.load("tests", "x").report(), fresh);

  LoadOptions device0;
  device0.device = 0;
  const Module chosen = runtime.load("tests", "x", device0);
  REQUIRE(chosen.report().device.has_value());
  CHECK(chosen.report().compatibility.ok);
  LoadOptions missing;
  missing.device = 1;  // one declared device: 1 does not exist, whatever report the pool has
  CHECK_THROWS_AS(runtime.load("tests", "x", missing), NotFoundError);
}

TEST_CASE("warm reports: a Module outliving its Runtime keeps its report; the Runtime's end frees the rest") {
  TempDir dir;
  std::optional<Module> kept;
  {
    Runtime runtime(store_options(dir));
    publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY, "y");
    { const Module warm = runtime.load("tests", "y"); }
    kept.emplace(runtime.load("tests", "y"));
  }
  CHECK(kept->report().resolution.name == "y");
  kept.reset();  // gives the report back to a pool nothing else holds: freed with it
}
