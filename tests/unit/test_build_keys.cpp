// Build keys and the object cache: command lines key argument by argument,
// and a cached object is linked only when its bytes are the ones recorded when it was cached.
#include <doctest/doctest.h>

#include <sstream>

#include <boost/filesystem/operations.hpp>

#include <kiln/ext/example.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/toolchain.hpp"
#include "support/build_recipe.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::read_text;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;

namespace {

// tests/data/build copied to a temp directory, built with real nvcc through the counting wrapper.
class KeysFixture {
 public:
  KeysFixture()
      : nvcc_(std::string("KILN_NVCC"), (dir_ / "src" / "nvcc-wrapper.sh").string()),
        log_(std::string("KILN_TEST_NVCC_LOG"), (dir_ / "nvcc.log").string()) {
    fs::create_directories(src());
    for (fs::directory_iterator it(fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "data" / "build"), end; it != end; ++it) {
      fs::copy_file(it->path(), src() / it->path().filename());
    }
    builder::reset_toolchain_memo_for_tests();
  }

  fs::path src() const { return dir_ / "src"; }
  fs::path objects() const { return dir_ / "cache" / "consumers" / "build-tests" / "objects"; }
  Recipe recipe() const { return Recipe::load((src() / "recipe.json").string()); }

  RuntimeOptions options(std::vector<std::string> *warnings = nullptr) const {
    RuntimeOptions options;
    options.cache_dir = (dir_ / "cache").string();
    options.declared_device = "sm_90";
    if (warnings != nullptr) {
      options.log = [warnings](LogLevel level, const std::string &message) {
        if (level == LogLevel::warning) warnings->push_back(message);
      };
    }
    return options;
  }

  // nvcc -c calls since the last call.
  int take_compiles() {
    int compiles = 0;
    std::istringstream lines(read_text(dir_ / "nvcc.log"));
    for (std::string line; std::getline(lines, line);) compiles += line.rfind("-c ", 0) == 0 ? 1 : 0;
    write_text(dir_ / "nvcc.log", "");
    return compiles;
  }

 private:
  TempDir dir_;
  ScopedEnv nvcc_, log_;
};

}  // namespace

TEST_CASE("build keys: two argv that are equal joined by spaces key differently" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  KeysFixture fx;
  Runtime runtime(fx.options());
  // ["-DA=1", "-DB=2"] and ["-DA=1 -DB=2"] are one string joined by spaces, yet nvcc is given
  // two defines in one case and one define (A = "1 -DB=2") in the other.
  Recipe separate = fx.recipe();
  separate.defines = {"SCALE=2", "A=1", "B=2"};
  Recipe joined = fx.recipe();
  joined.defines = {"SCALE=2", "A=1 -DB=2"};

  const BuildResult first = runtime.build(separate);
  CHECK(first.outcome == BuildResult::Outcome::built);
  CHECK(fx.take_compiles() == 2);
  const BuildResult second = runtime.build(joined);
  CHECK(second.input_key != first.input_key);
  CHECK(second.content_key != first.content_key);  // joined by spaces, both keyed the same entry
  CHECK(second.outcome == BuildResult::Outcome::built);
  CHECK(fx.take_compiles() == 2);
}

TEST_CASE("object cache: a damaged cached object is compiled again, never linked in" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  KeysFixture fx;
  std::vector<std::string> warnings;
  Runtime runtime(fx.options(&warnings));
  REQUIRE(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::built);
  REQUIRE(fx.take_compiles() == 2);

  // Damage plugin.cu's cached object the way a crash or a bad disk would: half of it is gone.
  fs::path object;
  for (fs::directory_iterator it(fx.objects()), end; it != end; ++it) {
    const std::string name = it->path().filename().string();
    if (name.rfind("plugin-", 0) == 0 && it->path().extension() == ".o") object = it->path();
  }
  REQUIRE_FALSE(object.empty());
  fs::resize_file(object, fs::file_size(object) / 2);

  SUBCASE("torn: recompiled, with a warning naming the object") {
    // Only helper.cpp changes: plugin.cu's object would be served from the cache.
    write_text(fx.src() / "helper.cpp", read_text(fx.src() / "helper.cpp") + "\n// edited\n");
    const BuildResult rebuilt = runtime.build(fx.recipe());
    CHECK(rebuilt.outcome == BuildResult::Outcome::built);
    CHECK(fx.take_compiles() == 2);  // helper.cpp (edited) and plugin.cu (damaged)
    for (const auto &unit : rebuilt.units) CHECK_FALSE(unit.cached);
    CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(7.0 + 3.0 + 200.0));
    bool named = false;
    for (const auto &warning : warnings) named = named || warning.find(object.string()) != std::string::npos;
    CHECK_MESSAGE(named, "a warning should name " << object.string());
  }
  SUBCASE("altered in place, same size: recompiled") {
    fs::resize_file(object, fs::file_size(object) * 2);  // zeros where code was
    write_text(fx.src() / "helper.cpp", read_text(fx.src() / "helper.cpp") + "\n// edited again\n");
    CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::built);
    CHECK(fx.take_compiles() == 2);
    CHECK(kiln::test::two_units_answer(runtime) == doctest::Approx(7.0 + 3.0 + 200.0));
  }
  SUBCASE("intact objects are still reused") {
    write_text(fx.src() / "plugin.cu", read_text(fx.src() / "plugin.cu") + "\n// edited\n");
    CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::built);
    CHECK(fx.take_compiles() == 1);  // plugin.cu; helper.cpp's object is whole
  }
}
