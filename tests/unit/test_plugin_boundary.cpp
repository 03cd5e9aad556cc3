// Every call from kiln into plugin code is a boundary: whatever a broken plugin throws (a
// std::exception, an int, a type the host cannot name) comes back as a typed AbiError naming
// the plugin file and the function, destroy/deactivate from destructors never end the host, and
// the host terminates every message buffer itself. The plugins misbehave on request
// (tests/plugins/hostile.cpp, throwing_helper.cpp; KILN_TEST_HOSTILE says how).
#include <doctest/doctest.h>

#include <kiln/ext/example.h>
#include <kiln/runtime.hpp>

#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;

namespace {

struct HostileStore {
  explicit HostileStore(const char *mode, const std::string &plugin = KILN_TEST_PLUGIN_HOSTILE)
      : env("KILN_TEST_HOSTILE", std::string(mode)) {
    RuntimeOptions options = kiln::test::store_options(dir, std::nullopt);
    options.log = log.callback();
    runtime.emplace(options);
    published = kiln::test::publish_plugin(*runtime, plugin);
  }
  TempDir dir;
  ScopedEnv env;
  kiln::test::CollectedLog log;
  std::optional<Runtime> runtime;
  PublishResult published;
};

// The longest run of 'x' in text: a plugin filled a 1024-byte buffer with 'x' and no NUL.
std::size_t longest_x_run(const std::string &text) {
  std::size_t best = 0, run = 0;
  for (char c : text) {
    run = c == 'x' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

}  // namespace

TEST_CASE("boundary: negotiate throwing any type is an AbiError naming the file and the function; the host lives") {
  struct Case {
    const char *mode;
    const char *what;  // how the exception is described
  };
  for (const Case &each : {Case{"negotiate-runtime-error", "std::runtime_error: negotiate exploded"},
                           Case{"negotiate-int", "of type int"},
                           Case{"negotiate-custom", "Unnamed"}}) {
    const std::string shown = each.mode;
    CAPTURE(shown);
    HostileStore store(each.mode);
    const std::string message = error_of<AbiError>([&] { store.runtime->load("tests", "example"); });
    CHECK(has(message, store.published.file));
    CHECK(has(message, "kiln_plugin_negotiate"));
    CHECK(has(message, each.what));
    // The host carries on: the same plugin, now behaving, loads in the same process.
    ScopedEnv behave("KILN_TEST_HOSTILE", std::nullopt);
    CHECK_NOTHROW(store.runtime->load("tests", "example"));
  }
}

TEST_CASE("boundary: create, activate and get_interface throwing are AbiErrors naming the function") {
  SUBCASE("create throws a type the host cannot name") {
    HostileStore store("create-throws");
    Module module = store.runtime->load("tests", "example");
    const std::string message = error_of<AbiError>([&] { module.create_instance(); });
    CHECK(has(message, "from create"));
    CHECK(has(message, "Unnamed"));
    CHECK(has(message, store.published.file));
  }
  SUBCASE("activate throws std::runtime_error") {
    HostileStore store("activate-throws");
    Module module = store.runtime->load("tests", "example");
    Instance instance = module.create_instance();
    const std::string message = error_of<AbiError>([&] { instance.activate(-1, 4); });
    CHECK(has(message, "from activate"));
    CHECK(has(message, "activate exploded"));
    CHECK_FALSE(instance.active());
  }
  SUBCASE("get_interface throws an int") {
    HostileStore store("get-interface-throws");
    Module module = store.runtime->load("tests", "example");
    Instance instance = module.create_instance();
    const std::string message =
        error_of<AbiError>([&] { instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID); });
    CHECK(has(message, "from get_interface"));
    CHECK(has(message, "of type int"));
  }
}

TEST_CASE("boundary: deactivate and destroy throwing from destructors are logged, never fatal") {
  HostileStore store("teardown-throws");
  {
    Module module = store.runtime->load("tests", "example");
    Instance instance = module.create_instance();
    instance.activate(-1, 4);
    instance.deactivate();  // noexcept: the plugin's throw must not terminate
    CHECK_FALSE(instance.active());
    Instance moved = module.create_instance();
    moved = module.create_instance();  // move assignment destroys the old instance
  }  // ~Instance destroys (throws 13 inside the plugin), then ~Module unloads
  const std::string log = store.log.text();
  CHECK(has(log, "from deactivate"));
  CHECK(has(log, "deactivate exploded"));
  CHECK(has(log, "from destroy"));
  CHECK(has(log, "of type int"));
  CHECK(has(log, store.published.file));
}

TEST_CASE("boundary: the host terminates message buffers a plugin filled without a NUL") {
  SUBCASE("create") {
    HostileStore store("create-no-nul");
    Module module = store.runtime->load("tests", "example");
    const std::string message = error_of<AbiError>([&] { module.create_instance(); });
    CHECK(longest_x_run(message) == 1023);  // the buffer's 1024 bytes, less the host's NUL
  }
  SUBCASE("activate") {
    HostileStore store("activate-no-nul");
    Module module = store.runtime->load("tests", "example");
    Instance instance = module.create_instance();
    const std::string message = error_of<AbiError>([&] { instance.activate(-1, 4); });
    CHECK(longest_x_run(message) == 1023);
  }
}

TEST_CASE("boundary: NULL where a table or an instance is due is a clear AbiError") {
  SUBCASE("negotiate answers KILN_OK without an entry table") {
    HostileStore store("null-entry");
    CHECK(has(error_of<AbiError>([&] { store.runtime->load("tests", "example"); }), "no entry table"));
  }
  SUBCASE("create answers KILN_OK without an instance") {
    HostileStore store("create-null-instance");
    Module module = store.runtime->load("tests", "example");
    CHECK(has(error_of<AbiError>([&] { module.create_instance(); }), "yet no instance"));
  }
  SUBCASE("negotiate finds no common version") {
    HostileStore store("negotiate-unsupported");
    CHECK(has(error_of<AbiError>([&] { store.runtime->load("tests", "example"); }), "offers no ABI version in [1.0,"));
  }
}

TEST_CASE("boundary: the KILN_PLUGIN helper turns its instance's exceptions into statuses and log lines") {
  SUBCASE("the constructor throws: create fails with the exception's message") {
    HostileStore store("helper-create-throws", KILN_TEST_PLUGIN_THROWING_HELPER);
    Module module = store.runtime->load("tests", "example");
    const std::string message = error_of<AbiError>([&] { module.create_instance(); });
    CHECK(has(message, "status 7"));  // KILN_ERR_INTERNAL: the helper caught it, not the host
    CHECK(has(message, "constructor exploded"));
  }
  SUBCASE("activate throws std::runtime_error and an int") {
    for (const char *mode : {"helper-activate-throws", "helper-activate-int"}) {
      const std::string shown = mode;
      CAPTURE(shown);
      HostileStore store(mode, KILN_TEST_PLUGIN_THROWING_HELPER);
      Module module = store.runtime->load("tests", "example");
      Instance instance = module.create_instance();
      try {
        instance.activate(-1, 4);
        FAIL("activate succeeded");
      } catch (const Error &error) {
        CHECK(error.kind() == ErrorKind::abi);
        CHECK(has(error.what(), "refused activate"));
        CHECK(has(error.what(), "status 7"));
        CHECK(has(error.what(), std::string(mode) == "helper-activate-int" ? "unknown exception in plugin"
                                                                            : "activate exploded"));
      }
    }
  }
  SUBCASE("get_interface and deactivate throw: logged through the host, nullptr / carried on") {
    HostileStore store("helper-get-interface-throws", KILN_TEST_PLUGIN_THROWING_HELPER);
    Module module = store.runtime->load("tests", "example");
    Instance instance = module.create_instance();
    CHECK(instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID) == nullptr);
    CHECK(has(store.log.text(), "get_interface threw: get_interface exploded"));
    ScopedEnv deactivating("KILN_TEST_HOSTILE", std::string("helper-deactivate-throws"));
    instance.activate(-1, 4);
    instance.deactivate();
    CHECK(has(store.log.text(), "deactivate threw: deactivate exploded"));
  }
}

TEST_CASE("boundary: kiln load exits 5 (AbiError), not SIGABRT, when negotiate throws") {
  TempDir dir;
  {
    Runtime runtime(kiln::test::store_options(dir, std::nullopt));
    kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_HOSTILE, "hostile");
  }
  for (const char *mode : {"negotiate-runtime-error", "negotiate-int", "negotiate-custom"}) {
    const std::string shown = mode;
    CAPTURE(shown);
    const auto result = kiln::test::run_kiln({"load", "tests", "hostile"},
                                             {{"KILN_CACHE_DIR", (dir / "cache").string()},
                                              {"KILN_STORE_PATH", ""},
                                              {"KILN_TEST_HOSTILE", mode}});
    CHECK(result.exit_code == 5);
    CHECK(has(result.err, "kiln_plugin_negotiate"));
    const auto as_json = kiln::test::run_kiln({"load", "tests", "hostile", "--json"},
                                           {{"KILN_CACHE_DIR", (dir / "cache").string()},
                                            {"KILN_STORE_PATH", ""},
                                            {"KILN_TEST_HOSTILE", mode}});
    CHECK(as_json.exit_code == 5);
    CHECK(has(as_json.out, "\"kind\": \"abi\""));
  }
}
