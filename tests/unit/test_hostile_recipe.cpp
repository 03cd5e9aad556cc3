// Hostile recipes and build inputs: nesting, numbers, FIFOs and
// devices in place of files, bytes that are not UTF-8. Each is a usage error (exit 2) naming the
// recipe and field, with valid --json output; nothing crashes or hangs.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>

#include "support/fixtures.hpp"
#include "support/hostile.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using kiln::test::check_json_error;
using kiln::test::kDeeplyNestedJson;
using kiln::test::read_text;
using kiln::test::run_kiln_bounded;
using kiln::test::TempDir;
using kiln::test::write_text;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {


// The build tests' two-unit recipe, copied into `dir_name` under a fresh directory.
class RecipeDir {
 public:
  explicit RecipeDir(const std::string &dir_name = "src") : src_(dir_ / dir_name) {
    fs::create_directories(src_);
    for (fs::directory_iterator it(fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "data" / "build"), end; it != end; ++it) {
      fs::copy_file(it->path(), src_ / it->path().filename());
    }
  }
  const fs::path &src() const { return src_; }
  fs::path recipe() const { return src_ / "recipe.json"; }
  const TempDir &dir() const { return dir_; }
  std::map<std::string, std::string> env() const {
    return {{"KILN_CACHE_DIR", (dir_ / "cache").string()},
            {"KILN_DEVICE", "sm_90"},
            {"KILN_STORE_PATH", ""},
            {"KILN_NVCC", (src_ / "nvcc-wrapper.sh").string()}};
  }
  // The recipe with one field replaced by raw JSON text.
  void set_raw(const std::string &field, const std::string &raw) const {
    json value = json::parse(read_text(recipe()));
    value[field] = "@@RAW@@";
    std::string text = value.dump();
    text.replace(text.find("\"@@RAW@@\""), 9, raw);
    write_text(recipe(), text);
  }
  kiln::test::CommandResult plan() const {
    return run_kiln_bounded({"build", recipe().string(), "--plan", "--json"}, env());
  }

 private:
  TempDir dir_;
  fs::path src_;
};

}  // namespace

TEST_CASE("hostile recipe: 100k-deep \"consumer\" or \"sources\" is refused, not a stack overflow (exit 2)") {
  for (const char *field : {"consumer", "sources", "defines"}) {
    CAPTURE(field);
    RecipeDir dir;
    dir.set_raw(field, kDeeplyNestedJson);
    const auto result = dir.plan();
    check_json_error(result, 2, "usage", dir.recipe().string());
    check_json_error(result, 2, "usage", "nested deeper than 64");
  }
}

TEST_CASE("hostile recipe: integers are range-checked (schema 2^32+1 is not 1; unit_memory_mb cannot overflow)") {
  struct Row {
    const char *field;
    const char *raw;
  };
  for (const Row &row : {Row{"schema", "4294967297"}, Row{"schema", "1.9"}, Row{"schema", "\"1\""},
                         Row{"unit_memory_mb", "18446744073709551615"}, Row{"unit_memory_mb", "-1"},
                         Row{"unit_memory_mb", "1e30"}, Row{"unit_memory_mb", "1e400"}}) {
    CAPTURE(row.field);
    CAPTURE(row.raw);
    RecipeDir dir;
    dir.set_raw(row.field, row.raw);
    const auto result = dir.plan();
    check_json_error(result, 2, "usage", dir.recipe().string());
    check_json_error(result, 2, "usage", std::string(row.raw) == "1e400" ? "1e400" : row.field);
  }
}

TEST_CASE("hostile recipe: a FIFO as the recipe, a FIFO or /dev/zero as a header are refused, never waited on") {
  RecipeDir dir;
  SUBCASE("the recipe is a FIFO") {
    const fs::path fifo = dir.src() / "fifo.json";
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    check_json_error(run_kiln_bounded({"build", fifo.string(), "--plan", "--json"}, dir.env()), 2, "usage",
                     fifo.string());
  }
  SUBCASE("a header is a FIFO") {
    REQUIRE(::mkfifo((dir.src() / "pipe.h").c_str(), 0644) == 0);
    dir.set_raw("headers", "[\"common.h\", \"pipe.h\"]");
    const auto result = dir.plan();
    check_json_error(result, 2, "usage", "headers");
    check_json_error(result, 2, "usage", (dir.src() / "pipe.h").string());
  }
  SUBCASE("a header is /dev/zero (endless)") {
    dir.set_raw("headers", "[\"common.h\", \"/dev/zero\"]");
    check_json_error(dir.plan(), 2, "usage", "/dev/zero");
  }
  SUBCASE("a source is /dev/zero") {
    dir.set_raw("sources", "[\"plugin.cu\", \"/dev/zero\"]");
    check_json_error(dir.plan(), 2, "usage", "/dev/zero");
  }
}

TEST_CASE("hostile recipe: a recipe with bytes that are not UTF-8 gives a valid --json error, not SIGABRT") {
  RecipeDir dir;
  std::string text = read_text(dir.recipe());
  text.replace(text.find("\"two-units\""), 11, "\"two-\xe9units\"");
  write_text(dir.recipe(), text);
  check_json_error(dir.plan(), 2, "usage", dir.recipe().string());
}

TEST_CASE("hostile build output: a compiler failing with bytes that are not UTF-8 gives a valid --json error (exit 7)" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  RecipeDir dir;
  // A compiler that fails every compile with Latin-1 output (its --version stays nvcc's).
  write_text(dir.src() / "latin1-nvcc.sh",
             "#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then printf 'caf\\351: erreur\\n' >&2; exit 1; fi\n"
             "exec /usr/local/cuda/bin/nvcc \"$@\"\n");
  fs::permissions(dir.src() / "latin1-nvcc.sh", fs::perms(0755));
  auto env = dir.env();
  env["KILN_NVCC"] = (dir.src() / "latin1-nvcc.sh").string();
  const auto result = run_kiln_bounded({"build", dir.recipe().string(), "--json"}, env, 120);
  check_json_error(result, 7, "build", "compiling");
  const json out = json::parse(result.out);
  CHECK(out["error"]["log"].get<std::string>().find("caf\xef\xbf\xbd: erreur") != std::string::npos);
}

TEST_CASE("hostile paths: a recipe in a Latin-1 directory builds, loads and hits (--json output stays valid)" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  RecipeDir dir("caf\xe9");
  auto result = run_kiln_bounded({"build", dir.recipe().string(), "--json"}, dir.env(), 300);
  REQUIRE_MESSAGE(result.exit_code == 0, result.out << result.err);
  const json built = json::parse(result.out);
  CHECK(built["outcome"] == "built");
  // identity.json records the recipe's path for people (U+FFFD for the byte) and stays readable.
  const fs::path entry = dir.dir() / "cache" / "consumers" / "build-tests" / "store" / built["content_key"].get<std::string>();
  const json identity = json::parse(read_text(entry / "identity.json"));
  CHECK(identity["provenance"]["recipe"].get<std::string>().find("caf\xef\xbf\xbd") != std::string::npos);

  result = run_kiln_bounded({"load", "build-tests", "two-units", "--json"}, dir.env());
  CHECK_MESSAGE(result.exit_code == 0, result.err);
  CHECK_NOTHROW(json::parse(result.out));
  result = run_kiln_bounded({"build", dir.recipe().string(), "--json"}, dir.env(), 120);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["outcome"] == "hit");
}

TEST_CASE("hostile recipe: Recipe::parse refuses deep, huge and mistyped numbers with UsageError naming the field") {
  const std::string base = "{\"schema\": 1, \"consumer\": \"c\", \"name\": \"n\", \"sources\": [], \"archs\": [\"sm_90\"], ";
  CHECK_THROWS_WITH_AS(kiln::Recipe::parse("{\"schema\": 4294967297}", "/tmp", "/tmp/r.json"),
                       doctest::Contains("\"schema\""), kiln::UsageError);
  CHECK_THROWS_WITH_AS(kiln::Recipe::parse("{\"schema\": 1e400}", "/tmp", "/tmp/r.json"), doctest::Contains("/tmp/r.json"),
                       kiln::UsageError);
  CHECK_THROWS_WITH_AS(kiln::Recipe::parse(base + "\"flags\": " + kDeeplyNestedJson + "}", "/tmp", "/tmp/r.json"),
                       doctest::Contains("nested deeper than 64"), kiln::UsageError);
}
