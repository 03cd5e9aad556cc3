// A host keeps plugins loaded while it loads others. The loader dlopens the verified descriptor
// as /proc/self/fd/<n>, and glibc answers dlopen of a name it has loaded before with that
// library: so a descriptor number must never name two files while either is loaded. Found by
// the reliability suite's multi-threaded host ("carries build stamp X but its manifest entry
// names content key Y": the second plugin's load returned the first plugin).
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <optional>

#include <boost/filesystem.hpp>

#include <kiln/ext/example.h>
#include <kiln/runtime.hpp>

#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::TempDir;
using kiln::test::example_fma;
using kiln::test::open_descriptors;

TEST_CASE("load: plugins kept loaded never answer for another plugin loaded after them") {
  TempDir dir;
  RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  options.declared_device = "sm_90";
  Runtime runtime(options);
  // Three entries of one plugin file (another toolkit is another content key).
  std::map<std::string, std::string> keys;
  for (const auto &[name, toolkit] : {std::make_pair("a", 0), std::make_pair("b", 12070), std::make_pair("c", 12080)}) {
    PublishRequest request;
    request.consumer = "many";
    request.name = name;
    request.artifact_file = KILN_TEST_PLUGIN_HOST_ONLY;
    request.cuda_toolkit_version = toolkit;
    keys[name] = runtime.publish(request).content_key;
  }
  REQUIRE(keys.size() == 3);

  SUBCASE("one loaded, the next loads") {
    const Module a = runtime.load("many", "a");
    const Module b = runtime.load("many", "b");
    CHECK(b.report().resolution.content_key == keys["b"]);
    CHECK(example_fma(a) == 7.0);
    CHECK(example_fma(b) == 7.0);
  }
  SUBCASE("the same plugin loaded twice, the first copy dropped, then another plugin") {
    std::optional<Module> first = runtime.load("many", "a");
    const Module second = runtime.load("many", "a");
    first.reset();  // the library stays loaded for `second`
    const Module b = runtime.load("many", "b");
    CHECK(b.report().resolution.content_key == keys["b"]);
    const Module c = runtime.load("many", "c");
    CHECK(c.report().resolution.content_key == keys["c"]);
    CHECK(example_fma(second) == 7.0);
  }
  SUBCASE("the same plugin loaded twice, the second copy dropped, then another plugin") {
    // glibc keeps the second load's name as an alias of the first library: the second copy's
    // descriptor number must stay taken while the first is loaded.
    const Module first = runtime.load("many", "a");
    std::optional<Module> second = runtime.load("many", "a");
    second.reset();
    for (const char *name : {"b", "c"}) {
      const Module other = runtime.load("many", name);
      CHECK(other.report().resolution.content_key == keys[name]);
      CHECK(example_fma(other) == 7.0);
    }
    CHECK(example_fma(first) == 7.0);
  }
  SUBCASE("a plugin kept mapped, loaded and unloaded again and again, takes no new descriptor") {
    // What a hot swap does with a plugin whose device code the CUDA runtime registered: every
    // load of it goes through the one descriptor kept open with its mapping.
    runtime.load("many", "a").keep_mapped();
    { const Module other = runtime.load("many", "b"); }  // b's descriptor is kept for its next load
    const std::size_t before = open_descriptors();
    for (int round = 0; round < 50; ++round) {
      const Module again = runtime.load("many", "a");
      const Module other = runtime.load("many", "b");
      CHECK(again.report().resolution.content_key == keys["a"]);
      CHECK(other.report().resolution.content_key == keys["b"]);
      CHECK(example_fma(again) == 7.0);
    }
    CHECK(open_descriptors() == before);
  }
  SUBCASE("a plugin the host itself dlopen'ed by path, loaded by kiln, dropped, then others") {
    // glibc then keeps kiln's /proc/self/fd name as an alias of the host's library, which the
    // loader's list does not show: that descriptor must stay taken.
    void *own = ::dlopen(runtime.resolve("many", "a").file.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(own != nullptr);
    std::optional<Module> through_kiln = runtime.load("many", "a");
    CHECK(example_fma(*through_kiln) == 7.0);
    through_kiln.reset();
    for (const char *name : {"b", "c", "b"}) {
      const Module other = runtime.load("many", name);
      CHECK(other.report().resolution.content_key == keys[name]);
    }
    ::dlclose(own);
  }
  SUBCASE("loaded, unloaded and loaded again in turn") {
    for (int round = 0; round < 3; ++round) {
      for (const char *name : {"a", "b", "c"}) {
        const Module kept = runtime.load("many", name);
        const Module other = runtime.load("many", std::string(name) == "a" ? "b" : "a");
        CHECK(kept.report().resolution.content_key == keys[name]);
      }
    }
  }
}
