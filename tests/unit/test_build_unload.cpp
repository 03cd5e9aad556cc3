// Plugins built on miss get the checks kiln_add_plugin applies after its link (one export, no
// gnu-unique symbol, no NODELETE), read from the ELF itself; recipe link_flags are validated
// like flags.
#include <doctest/doctest.h>

#include <boost/filesystem/operations.hpp>

#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/toolchain.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;

namespace {

bool have_nvcc() {
  static const bool found = fs::exists("/usr/local/cuda/bin/nvcc") ||
                            kiln::test::run_shell("command -v nvcc").exit_code == 0;
  return found;
}

// A one-unit host-code plugin; `extra` is appended to its source.
Recipe write_recipe(const TempDir &dir, const std::string &extra, const std::string &link_flags = "[]") {
  write_text(dir / "plugin.cpp", R"(#include <cstring>
#include <kiln/plugin.hpp>
namespace {
class Plain final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  const void *get_interface(const char *) const noexcept override { return nullptr; }
};
}  // namespace
KILN_PLUGIN(Plain, "org.kiln.test.recipe", "1.0.0", "kiln.example/1")
)" + extra);
  write_text(dir / "recipe.json", R"({"schema": 1, "consumer": "tests", "name": "recipe", "sources": ["plugin.cpp"],
    "archs": ["sm_90"], "artifact": "librecipe.so", "link_flags": )" + link_flags + "}");
  return Recipe::load((dir / "recipe.json").string());
}

}  // namespace

TEST_CASE("build unload rules: a recipe whose source exports an extra symbol fails to build, naming it" *
          doctest::skip(!have_nvcc())) {
  TempDir dir;
  builder::reset_toolchain_memo_for_tests();
  Runtime runtime(kiln::test::store_options(dir));
  const Recipe recipe = write_recipe(
      dir, "extern \"C\" __attribute__((visibility(\"default\"))) int kiln_test_recipe_extra_export() { return 1; }\n");
  const std::string message = error_of<BuildError>([&] { runtime.build(recipe); });
  CHECK(has(message, "kiln_test_recipe_extra_export"));
  CHECK(has(message, "-fvisibility=hidden"));
  CHECK(has(message, "Nothing was published"));
  CHECK_THROWS_AS(runtime.resolve("tests", "recipe"), NotFoundError);
}

TEST_CASE("build unload rules: the same recipe without the extra export builds and loads" * doctest::skip(!have_nvcc())) {
  TempDir dir;
  builder::reset_toolchain_memo_for_tests();
  Runtime runtime(kiln::test::store_options(dir));
  const Recipe recipe = write_recipe(dir, "");
  runtime.build(recipe);
  CHECK_NOTHROW(runtime.load("tests", "recipe"));
}

TEST_CASE("build unload rules: skipped here" * doctest::skip(have_nvcc())) {
  MESSAGE("SKIPPED the two recipe builds above: no nvcc (neither /usr/local/cuda/bin/nvcc nor on PATH)");
}

TEST_CASE("build unload rules: link_flags are validated like flags") {
  TempDir dir;
  const auto message = [&](const std::string &link_flags) {
    return error_of<UsageError>([&] { write_recipe(dir, "", link_flags); });
  };
  CHECK(has(message(R"(["-o"])"), "link_flags"));
  CHECK(has(message(R"(["-o"])"), "kiln sets itself"));
  CHECK(has(message(R"(["--shared"])"), "kiln sets itself"));
  CHECK(has(message(R"(["-Xlinker=-z,nodelete"])"), "NODELETE"));
  CHECK_NOTHROW(write_recipe(dir, "", R"(["-lm"])"));
}
