// ensure / ensure_kernels fall back to the prepared artifact only where there is no toolchain
// at all (ToolchainMissingError: no nvcc, no NVRTC); any other build failure is reported.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/kernels.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/backends/nvrtc/toolchain.hpp"
#include "builder/toolchain.hpp"
#include "support/build_recipe.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/checks.hpp"

using namespace kiln;
using kiln::test::BuildRecipeDir;
using kiln::test::ScopedEnv;
using kiln::test::write_text;

namespace {

using kiln::test::contains;

// Log lines a Runtime wrote.
struct Logs {
  std::vector<std::string> lines;
  LogCallback callback() {
    return [this](LogLevel level, const std::string &message) { lines.push_back(std::string(to_string(level)) + ": " + message); };
  }
  std::string text() const {
    std::string out;
    for (const auto &line : lines) out += line + "\n";
    return out;
  }
  bool mention(const std::string &part) const {
    for (const auto &line : lines) {
      if (contains(line, part)) return true;
    }
    return false;
  }
};

// Builds the recipe with the real toolchain: the artifact a robot would have been given.
std::string prepare(const BuildRecipeDir &fx) {
  Runtime runtime(fx.options());
  return runtime.build(fx.recipe()).content_key;
}

}  // namespace

TEST_CASE("ensure: a compiler that runs but writes nothing fails the build; the prepared artifact is not loaded" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  const std::string prepared = prepare(fx);
  // Answers --version like nvcc (another release: a rebuild is due), then "compiles" nothing.
  const auto silent = fx.script("silent-nvcc", "if [ \"$1\" = --version ]; then\n"
                                               "  echo 'Cuda compilation tools, release 13.9, V13.9.99'\n"
                                               "  echo 'Build cuda_13.9.r13.9/compiler.0_0'\n"
                                               "fi\nexit 0\n");
  ScopedEnv nvcc("KILN_NVCC", silent.string());
  builder::reset_toolchain_memo_for_tests();
  Logs logs;
  Runtime runtime(fx.options(logs.callback()));
  try {
    runtime.ensure(fx.recipe());
    FAIL("ensure loaded an artifact although its build failed");
  } catch (const BuildError &error) {
    CAPTURE(error.what());
    CHECK(contains(error.what(), "wrote no"));
    CHECK((contains(error.what(), "plugin.o") || contains(error.what(), "helper.o")));
  }
  CHECK_FALSE(logs.mention("loading the prepared"));
  CHECK(runtime.resolve("build-tests", "two-units").content_key == prepared);  // nothing published
}

TEST_CASE("ensure: nvcc without its host compiler is a broken toolchain to report, not a fallback" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  prepare(fx);
  ScopedEnv host("KILN_HOST_CXX", std::string("/nonexistent/g++"));
  builder::reset_toolchain_memo_for_tests();
  Logs logs;
  Runtime runtime(fx.options(logs.callback()));
  try {
    runtime.ensure(fx.recipe());
    FAIL("ensure loaded the prepared artifact");
  } catch (const ToolchainMissingError &error) {
    FAIL("a missing host compiler read as no toolchain: " << error.what());
  } catch (const NotFoundError &error) {
    CHECK(contains(error.what(), "KILN_HOST_CXX=/nonexistent/g++"));
  }
  CHECK_FALSE(logs.mention("loading the prepared"));
}

TEST_CASE("ensure: without nvcc it loads the prepared artifact and logs why" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  const std::string prepared = prepare(fx);
  std::string why;
  SUBCASE("KILN_NVCC points nowhere") {
    ScopedEnv nvcc("KILN_NVCC", std::string("/nonexistent/nvcc"));
    builder::reset_toolchain_memo_for_tests();
    CHECK_THROWS_AS(Runtime(fx.options()).build(fx.recipe()), ToolchainMissingError);
    Logs logs;
    Runtime runtime(fx.options(logs.callback()));
    Module module = runtime.ensure(fx.recipe());
    CHECK(module.report().resolution.content_key == prepared);
    CAPTURE(logs.text());
    CHECK(logs.mention("warning: no toolchain (KILN_NVCC=/nonexistent/nvcc"));
    CHECK(logs.mention("loading the prepared build-tests/two-units (" + prepared + ")"));
  }
  SUBCASE("no nvcc in CUDA_HOME, CUDA_PATH, PATH or the fallback directory") {
    ScopedEnv nvcc("KILN_NVCC", std::nullopt);
    ScopedEnv home("CUDA_HOME", std::string("/nonexistent"));
    ScopedEnv cuda_path("CUDA_PATH", std::nullopt);
    ScopedEnv path("PATH", std::string("/usr/bin:/bin"));
    ScopedEnv fallback("KILN_CUDA_FALLBACK_DIR", std::string("/nonexistent"));
    builder::reset_toolchain_memo_for_tests();
    Logs logs;
    Runtime runtime(fx.options(logs.callback()));
    Module module = runtime.ensure(fx.recipe());
    CHECK(module.report().resolution.content_key == prepared);
    CAPTURE(logs.text());
    CHECK(logs.mention("warning: no toolchain (nvcc not found; looked at:"));
    CHECK(logs.mention("loading the prepared build-tests/two-units"));
  }
  builder::reset_toolchain_memo_for_tests();
}

TEST_CASE("jit: NVRTC absent is ToolchainMissingError; nvJitLink absent is a plain NotFoundError") {
  ScopedEnv nvrtc("KILN_NVRTC", std::string("/nonexistent/libnvrtc.so.13"));
  ScopedEnv link("KILN_NVJITLINK", std::string("/nonexistent/libnvJitLink.so.13"));
  builder::NvrtcToolchain absent(builder::NvrtcSearch::from_environment());
  builder::NvrtcRequest request;
  request.sources = {{"k.cu", "extern \"C\" __global__ void k() {}\n"}};
  request.archs = {Arch::parse("sm_90")};
  CHECK_THROWS_AS(absent.compile(request), ToolchainMissingError);
}

TEST_CASE("ensure_kernels (CLI): nvJitLink missing for an LTO recipe is reported; NVRTC missing falls back" *
          kiln::test::skip_if(kiln::test::no_nvjitlink)) {
  kiln::test::TempDir dir;
  write_text(dir / "apply.cu", "extern __device__ float twice(float);\n"
                               "extern \"C\" __global__ void apply(float *v, int n) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                               "  if (i < n) v[i] = twice(v[i]);\n}\n");
  write_text(dir / "twice.cu", "__device__ float twice(float x) { return 2.0f * x; }\n");
  write_text(dir / "lto.json", R"({"schema": 1, "consumer": "fallback-tests", "name": "lto", "backend": "nvrtc",
    "sources": ["apply.cu", "twice.cu"], "archs": ["sm_90"], "lto": true,
    "kernels": [{"name": "apply", "source": "apply.cu"}]})");
  RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  options.declared_device = "sm_90";
  Runtime(options).build(Recipe::load((dir / "lto.json").string()));  // prepared
  write_text(dir / "twice.cu", "__device__ float twice(float x) { return x + x; }\n");  // a rebuild is due

  std::map<std::string, std::string> env = {{"KILN_CACHE_DIR", (dir / "cache").string()},
                                            {"KILN_DEVICE", "sm_90"},
                                            {"KILN_STORE_PATH", ""}};
  auto no_link = env;
  no_link["KILN_NVJITLINK"] = "/nonexistent/libnvJitLink.so.13";
  auto result = kiln::test::run_kiln({"ensure", (dir / "lto.json").string()}, no_link);
  CAPTURE(result.err);
  CHECK(result.exit_code == 3);
  CHECK(contains(result.err, "nvJitLink"));
  CHECK_FALSE(contains(result.err, "loading the prepared"));

  auto no_nvrtc = env;
  no_nvrtc["KILN_NVRTC"] = "/nonexistent/libnvrtc.so.13";
  result = kiln::test::run_kiln({"ensure", (dir / "lto.json").string()}, no_nvrtc);
  CAPTURE(result.err);
  CHECK(contains(result.err, "no toolchain (cannot build fallback-tests/lto"));
  CHECK(contains(result.err, "loading the prepared fallback-tests/lto"));
  CHECK(result.exit_code != 3);  // then loaded (a driver here) or stopped at the driver (none here)
}
