// The load path end to end on real plugin files: publish -> resolve -> check -> verify ->
// dlopen -> negotiate -> bind, and every refusal the core runtime promises.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <functional>

#include <boost/filesystem/operations.hpp>

#include <kiln/ext/example.h>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>
#include <kiln/version.hpp>

#include "files/digest.hpp"
#include "store/entry.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;
using kiln::test::is_mapped;
using kiln::test::publish_plugin;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

RuntimeOptions options_for(const TempDir &dir, std::optional<std::string> device = std::string("sm_90"),
                           std::vector<std::string> layers = {}) {
  RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  options.declared_device = std::move(device);
  options.read_only_stores = std::move(layers);
  return options;
}


}  // namespace

TEST_CASE("publish + load: the example plugin negotiates, binds its stamp and answers host calls") {
  TempDir dir;
  Runtime runtime(options_for(dir));
  const PublishResult published = publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  CHECK(files::digest_file(published.file) == store::read_entry_meta(published.entry_dir).digest);
  CHECK_FALSE(published.reused);
  // The stored copy carries its content key in the stamp slot; the source file is untouched.
  CHECK(has(kiln::test::read_text(published.file), published.content_key));
  CHECK_FALSE(has(kiln::test::read_text(KILN_TEST_PLUGIN_EXAMPLE), published.content_key));

  Module module = runtime.load("tests", "example");
  const LoadReport &report = module.report();
  CHECK(report.resolution.content_key == published.content_key);
  CHECK(report.abi_version == kAbiVersion);
  CHECK(report.plugin_id == "org.kiln.test.example");
  REQUIRE(report.interfaces.size() == 1);
  CHECK(report.interfaces[0] == KILN_EXAMPLE_INTERFACE_ID);
  REQUIRE(report.device);
  CHECK(report.device->declared);
  CHECK(report.compatibility.ok);
  REQUIRE(report.compatibility.image);
  CHECK(report.compatibility.image->to_string() == "sm_90");
  CHECK(std::string(module.entry().stamp->content_key) == published.content_key);

  Instance instance = module.create_instance();
  const auto *example = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
  REQUIRE(example != nullptr);
  CHECK(example->host_fma(instance.handle(), 2.0, 3.0, 1.0) == doctest::Approx(7.0));
  CHECK(instance.interface<kiln_example_v1>("kiln.nothing/1") == nullptr);
  CHECK(is_mapped(published.file));

  SUBCASE("publishing the same file again reuses the entry") {
    const PublishResult again = publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
    CHECK(again.reused);
    CHECK(again.content_key == published.content_key);
  }
  SUBCASE("other archs make another entry") {
    CHECK(publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example-ptx", "sm_90,compute_90").content_key !=
          published.content_key);
  }
}

TEST_CASE("host-only plugin loads and creates instances with no device at all") {
  TempDir dir;
  Runtime runtime(options_for(dir, std::nullopt));
  publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY, "example", "");
  Module module = runtime.load("tests", "example");
  CHECK(module.report().resolution.identity.archs.empty());
  Instance instance = module.create_instance();
  instance.activate(-1, 16);
  CHECK(instance.active());
  const auto *example = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
  REQUIRE(example != nullptr);
  CHECK(example->host_fma(instance.handle(), 1.5, 2.0, 0.5) == doctest::Approx(3.5));
}

TEST_CASE("arch refusal: sm_90 SASS on a declared sm_100 device and on a declared sm_87, each naming the field") {
  TempDir dir;
  {
    Runtime runtime(options_for(dir, std::string("sm_100")));
    publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
    try {
      runtime.load("tests", "example");
      FAIL("loaded sm_90 code for sm_100");
    } catch (const IncompatibleError &error) {
      REQUIRE(!error.reasons().empty());
      CHECK(error.reasons()[0].field == "cuda_arch");
      CHECK(error.reasons()[0].recorded == "sm_90");
      CHECK(error.reasons()[0].current == "sm_100");
      CHECK(has(error.what(), "tests/example"));
    }
  }
  {
    Runtime runtime(options_for(dir, std::string("sm_87")));
    publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
    try {
      runtime.load("tests", "example");
      FAIL("loaded sm_90 code for sm_87");
    } catch (const IncompatibleError &error) {
      REQUIRE(!error.reasons().empty());
      CHECK(error.reasons()[0].recorded == "sm_90");
      CHECK(error.reasons()[0].current == "sm_87");
    }
  }
  CHECK_FALSE(is_mapped(fs::path(KILN_TEST_PLUGIN_EXAMPLE)));
}

TEST_CASE("integrity: a truncated or missing artifact file is refused and never dlopen'ed") {
  TempDir dir;
  Runtime runtime(options_for(dir));
  const PublishResult published = publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  ::chmod(published.file.c_str(), 0644);
  const std::string bytes = kiln::test::read_text(published.file);

  SUBCASE("truncated") {
    kiln::test::write_text(published.file, bytes.substr(0, bytes.size() / 2));
    const std::string message = error_of<IntegrityError>([&] { runtime.load("tests", "example"); });
    CHECK(has(message, "digest"));
    CHECK(has(message, published.file));
    CHECK_FALSE(is_mapped(published.file));
  }
  SUBCASE("one flipped byte") {
    std::string flipped = bytes;
    flipped[flipped.size() / 3] = static_cast<char>(flipped[flipped.size() / 3] ^ 0x40);
    kiln::test::write_text(published.file, flipped);
    CHECK_THROWS_AS(runtime.load("tests", "example"), IntegrityError);
    CHECK_FALSE(is_mapped(published.file));
  }
  SUBCASE("missing") {
    fs::remove(published.file);
    const std::string message = error_of<IntegrityError>([&] { runtime.load("tests", "example"); });
    CHECK(has(message, published.file));
  }
}

TEST_CASE("integrity: a store others can write is refused before any code runs") {
  TempDir dir;
  Runtime runtime(options_for(dir));
  const PublishResult published = publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  ::chmod(published.entry_dir.c_str(), 0777);
  const std::string message = error_of<IntegrityError>([&] { runtime.load("tests", "example"); });
  CHECK(has(message, "chmod go-w"));
  CHECK_FALSE(is_mapped(published.file));
}

TEST_CASE("abi: a file that is not a kiln plugin, and a plugin offering only ABI 2.0, are refused") {
  TempDir dir;
  Runtime runtime(options_for(dir));
  SUBCASE("not a plugin: publish refuses it (no stamp)") {
    const std::string message =
        error_of<AbiError>([&] { publish_plugin(runtime, KILN_TEST_PLUGIN_NOT_A_PLUGIN, "example", "sm_90"); });
    CHECK(has(message, "not a kiln plugin"));
  }
  SUBCASE("not a plugin: an entry forged around it is refused before dlopen (no stamp)") {
    kiln::test::forge_entry(dir / "cache", "tests", "example", std::string(32, 'f'), KILN_TEST_PLUGIN_NOT_A_PLUGIN);
    const std::string message = error_of<AbiError>([&] { runtime.load("tests", "example"); });
    CHECK(has(message, "not a kiln plugin"));
  }
  SUBCASE("ABI 2.0 only: publish refuses it, and an entry forged around it is refused before dlopen") {
    CHECK(has(error_of<AbiError>([&] { publish_plugin(runtime, KILN_TEST_PLUGIN_ABI2, "example", ""); }),
                   "offers plugin ABI up to 2.0"));
    kiln::test::forge_entry(dir / "cache", "tests", "example", std::string(32, 'f'), KILN_TEST_PLUGIN_ABI2);
    const std::string message = error_of<AbiError>([&] { runtime.load("tests", "example"); });
    CHECK(has(message, "offers plugin ABI up to 2.0"));
  }
  SUBCASE("a host asking for a newer minor than the plugin offers") {
    publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY, "example", "");
    LoadOptions options;
    options.abi_required = KILN_ABI_MAKE_VERSION(KILN_ABI_VERSION_MAJOR, KILN_ABI_VERSION_MINOR + 1);
    CHECK_THROWS_AS(runtime.load("tests", "example", options), AbiError);
  }
}

TEST_CASE("integrity: a plugin whose build stamp does not match its entry is refused") {
  TempDir dir;
  Runtime runtime(options_for(dir));
  const PublishResult published = publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  // Another entry holding that (validly digested) file: its stamp names the first entry's key.
  const std::string other_key(32, 'e');
  kiln::test::forge_entry(dir / "cache", "tests", "example", other_key, published.file, "[\"sm_90\"]");
  const std::string message = error_of<IntegrityError>([&] { runtime.load("tests", "example"); });
  CHECK(has(message, "build stamp " + published.content_key));
  CHECK(has(message, other_key));
}

TEST_CASE("resolve: bad names, missing consumers and artifacts, damaged manifests") {
  TempDir dir;
  Runtime runtime(options_for(dir));
  CHECK_THROWS_AS(runtime.resolve("../etc", "x"), UsageError);
  CHECK_THROWS_AS(runtime.resolve("tests", "a/b"), UsageError);
  CHECK(has(error_of<NotFoundError>([&] { runtime.resolve("tests", "example"); }), "no consumer \"tests\""));
  publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  const std::string missing = error_of<NotFoundError>([&] { runtime.resolve("tests", "other"); });
  CHECK(has(missing, "it has: example"));

  const fs::path manifest = dir / "cache" / "consumers" / "tests" / "manifest.json";
  const std::string good = kiln::test::read_text(manifest);
  kiln::test::write_text(manifest, good.substr(0, good.size() - 10));
  CHECK_THROWS_AS(runtime.resolve("tests", "example"), IntegrityError);
  kiln::test::write_text(manifest, R"({"schema": 7, "consumer": "tests", "artifacts": {}})");
  CHECK_THROWS_AS(runtime.resolve("tests", "example"), IncompatibleError);
}

TEST_CASE("layers: a read-only store is searched first and shadows the cache; list shows both") {
  TempDir vendor_dir, robot_dir;
  {
    Runtime vendor(options_for(vendor_dir));
    publish_plugin(vendor, KILN_TEST_PLUGIN_HOST_ONLY, "example", "");
  }
  Runtime robot(options_for(robot_dir, std::string("sm_90"), {(vendor_dir / "cache").string()}));
  CHECK(robot.resolve("tests", "example").store_root == (vendor_dir / "cache").string());
  publish_plugin(robot, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  CHECK_FALSE(robot.resolve("tests", "example").store_writable);  // the layer still wins
  const auto listed = robot.list();
  REQUIRE(listed.size() == 2);
  CHECK_FALSE(listed[0].shadowed);
  CHECK(listed[1].shadowed);
  Module module = robot.load("tests", "example");
  CHECK(module.report().resolution.identity.archs.empty());
}

TEST_CASE("publish: a crash mid-publish leaves only a staging directory, swept by the next publish") {
  TempDir dir;
  Runtime runtime(options_for(dir));
  const fs::path entries = dir / "cache" / "consumers" / "tests" / "store";
  // As a killed publisher leaves it: its staging lock file there, the lock gone with it.
  const fs::path staging = entries / ".staging-v2-0123456789abcdef";
  fs::create_directories(staging);
  kiln::test::write_text(staging / ".staging.lock", "");
  kiln::test::write_text(staging / "half.so", "partial");
  publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  CHECK_FALSE(fs::exists(staging));
  CHECK_NOTHROW(runtime.load("tests", "example"));
}

TEST_CASE("integrity: a file changed after a successful load is checked again, not trusted from memory") {
  TempDir dir;
  Runtime runtime(options_for(dir));
  const PublishResult published = publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  { Module first = runtime.load("tests", "example"); }
  ::chmod(published.file.c_str(), 0644);
  std::string bytes = kiln::test::read_text(published.file);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);  // same size, one bit
  kiln::test::write_text(published.file, bytes);
  CHECK_THROWS_AS(runtime.load("tests", "example"), IntegrityError);
}
