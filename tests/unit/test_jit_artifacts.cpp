// Device-image artifacts end to end: "nvrtc" recipes built on miss into the store (one file per
// image, kernels in meta.json), hits without NVRTC, rebuilds, failures; Runtime::load_kernels'
// checks before the driver; the CLI; kiln.host.kernels/1 for a plugin loaded through a Runtime
// (launch, get_driver_proc); and in suite "gpu": build -> load -> run, refusals, PTX, the plugin.
#include <doctest/doctest.h>

#include <cuda.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/ext/host_kernels.h>
#include <kiln/kernels.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/builder.hpp"
#include "builder/backends/nvrtc/toolchain.hpp"
#include "builder/toolchain.hpp"
#include "device/discover.hpp"
#include "device/driver.hpp"
#include "load/host_kernels.hpp"
#include "plugins/host_kernels_user.h"
#include "files/digest.hpp"
#include "support/fixtures.hpp"
#include "support/gpu_saxpy.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/checks.hpp"
#include "support/fake_host.hpp"

using namespace kiln;
using kiln::test::read_text;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;
using nlohmann::json;

namespace {

constexpr const char *kSource = R"(#include "scale_unit.cuh"
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T>
__global__ void scale(T *v, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * factor * kiln_unit();
}
)";
constexpr const char *kUnitHeader = "__device__ inline float kiln_unit() { return 1.0f; }\n";

using kiln::test::contains;

// A recipe directory: kernels.cu including "scale_unit.cuh" from include/ (an include_dir).
class JitFixture {
 public:
  explicit JitFixture(const std::string &archs = R"("sm_90", "sm_87", "compute_90")") {
    fs::create_directories(src() / "include");
    write_text(src() / "kernels.cu", kSource);
    write_text(src() / "include" / "scale_unit.cuh", kUnitHeader);
    write_recipe(archs);
  }

  void write_recipe(const std::string &archs, const std::string &extra = "") const {
    write_text(recipe_file(), R"({"schema": 1, "consumer": "jit-tests", "name": "saxpy", "backend": "nvrtc",
      "sources": ["kernels.cu"], "headers": ["include/"], "include_dirs": ["include"],
      "archs": [)" + archs + R"(], "kernels": ["saxpy", "scale<float>"])" + extra + "}");
  }

  fs::path src() const { return dir_ / "src"; }
  fs::path cache() const { return dir_ / "cache"; }
  fs::path recipe_file() const { return src() / "recipe.json"; }
  Recipe recipe() const { return Recipe::load(recipe_file().string()); }
  const TempDir &dir() const { return dir_; }

  // A declared sm_90 stands in for the device: checks and builds run without a driver.
  RuntimeOptions options(bool declared = true) const {
    RuntimeOptions options;
    options.cache_dir = cache().string();
    if (declared) options.declared_device = "sm_90";
    return options;
  }

  int entries() const {
    int count = 0;
    const fs::path store = cache() / "consumers" / "jit-tests" / "store";
    if (!fs::exists(store)) return 0;
    for (fs::directory_iterator it(store), end; it != end; ++it) ++count;
    return count;
  }

 private:
  TempDir dir_;
};

builder::NvrtcToolchain &jit() {
  builder::NvrtcToolchain &toolchain = builder::NvrtcToolchain::instance();
  INFO(toolchain.nvrtc().detail);
  REQUIRE(toolchain.nvrtc().found);
  return toolchain;
}

using kiln::test::error_of;

// Overwrite one byte of a store file in place (as a damaged disk or a tamperer would).
void damage(const fs::path &file, std::size_t offset) {
  std::string bytes = read_text(file);
  REQUIRE(offset < bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5a);
  ::chmod(file.c_str(), 0644);
  write_text(file, bytes);
}

bool driver_present() { return device::Driver::instance().ok(); }

}  // namespace

// --- recipes --------------------------------------------------------------------------------

TEST_CASE("jit recipe: kernels are required for nvrtc and refused for nvcc; lto is a boolean; several sources name theirs") {
  TempDir dir;
  write_text(dir / "a.cu", "");
  write_text(dir / "b.cu", "");
  const auto message = [&](const std::string &text) -> std::string {
    try {
      Recipe::parse(text, dir.path().string(), "test.json");
    } catch (const Error &error) {
      return error.what();
    }
    return "";
  };
  const std::string base = R"("schema":1,"consumer":"c","name":"n","archs":["sm_90"])";
  CHECK(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu"],"kernels":["k"]})").empty());
  CHECK(contains(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu"]})"), "\"kernels\" is empty or missing"));
  CHECK(contains(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu"],"kernels":[]})"), "name expressions"));
  CHECK(contains(message("{" + base + R"(,"artifact":"l.so","sources":["a.cu"],"kernels":["k"]})"), "\"kernels\" is for"));
  CHECK(contains(message("{" + base + R"(,"artifact":"l.so","sources":["a.cu"],"lto":true})"), "\"lto\" is for"));
  CHECK(contains(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu"],"kernels":["k"],"lto":1})"), "true or false"));
  CHECK(contains(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu"],"kernels":["k","k"]})"), "twice"));
  CHECK(contains(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu","b.cu"],"kernels":["k"]})"),
                 "several sources"));
  CHECK(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu","b.cu"],"kernels":[{"name":"k","source":"b.cu"}]})")
            .empty());
  CHECK(contains(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu"],"kernels":[{"name":"k","source":"b.cu"}]})"),
                 "not one of the recipe's"));
  CHECK(contains(message("{" + base + R"(,"backend":"nvrtc","sources":["a.cu"],"kernels":["k"],"artifact":"x.cubin"})"),
                 "image index"));
  const Recipe recipe = Recipe::parse("{" + base + R"(,"backend":"nvrtc","sources":["a.cu"],"kernels":["k"],"lto":true})",
                                      dir.path().string(), "test.json");
  CHECK(recipe.artifact == "n.images");
  CHECK(recipe.lto);
  REQUIRE(recipe.kernels.size() == 1);
  CHECK(recipe.kernels[0].name == "k");
  const json canonical = json::parse(recipe.canonical_json());
  CHECK(canonical["kernels"] == json::array({"k"}));
  CHECK(canonical["lto"] == true);
  // An nvcc recipe's canonical form (and so its input key) has no such fields.
  const Recipe plugin = Recipe::parse("{" + base + R"(,"artifact":"l.so","sources":["a.cu"]})", dir.path().string(), "t");
  CHECK_FALSE(json::parse(plugin.canonical_json()).contains("kernels"));
}

// --- building -------------------------------------------------------------------------------

TEST_CASE("jit build: sm_90 + sm_87 + compute_90 -> one file per image, kernels in meta.json; again: a hit, no NVRTC") {
  builder::NvrtcToolchain &toolchain = jit();
  JitFixture fx;
  Runtime runtime(fx.options());
  const std::uint64_t compiles = builder::jit_compile_count();
  const BuildResult first = runtime.build(fx.recipe());
  CHECK(first.outcome == BuildResult::Outcome::built);
  CHECK(builder::jit_compile_count() == compiles + 1);
  CHECK(first.units.size() == 3);  // one NVRTC step per arch
  const fs::path entry = first.entry_dir;
  for (const char *file : {"sm_90.cubin", "sm_87.cubin", "compute_90.ptx", "saxpy.images", "meta.json", "identity.json",
                           "build.log"}) {
    CAPTURE(file);
    CHECK(fs::is_regular_file(entry / file));
  }
  CHECK(fs::exists(entry / "images.fatbin") == toolchain.nvfatbin().found);

  const json meta = json::parse(read_text(entry / "meta.json"));
  CHECK(meta["kind"] == "images");
  CHECK(meta["schema"] == 1);
  CHECK(meta["file"] == "saxpy.images");
  const std::size_t images = toolchain.nvfatbin().found ? 4 : 3;
  REQUIRE(meta["images"].size() == images);
  std::set<std::string> seen;
  for (const auto &image : meta["images"]) {
    const std::string file = image["file"];
    seen.insert(file);
    CHECK(image["digest"] == files::digest_file(entry / file));
    CHECK(image["size"].get<std::uint64_t>() == fs::file_size(entry / file));
  }
  CHECK(seen.count("compute_90.ptx") == 1);
  REQUIRE(meta["kernels"].size() == 2);
  CHECK(meta["kernels"][0]["name"] == "saxpy");
  CHECK(meta["kernels"][0]["lowered_name"] == "saxpy");
  CHECK(meta["kernels"][1]["name"] == "scale<float>");
  CHECK(meta["kernels"][1]["lowered_name"].get<std::string>().rfind("_Z5scaleIf", 0) == 0);
  CHECK(meta["digest"] == files::digest_file(entry / "saxpy.images"));

  const json identity = json::parse(read_text(entry / "identity.json"));
  CHECK(identity["archs"] == json::array({"compute_90", "sm_87", "sm_90"}));
  CHECK(identity["cuda_toolkit_version"] == toolchain.nvrtc().version);
  CHECK(identity["abi_version"] == 0);
  CHECK(identity["provenance"]["backend"] == "nvrtc");
  CHECK(contains(identity["provenance"]["jit_toolchain"], "nvrtc=" + toolchain.nvrtc().version_text()));
  CHECK_FALSE(identity["provenance"].contains("nvcc_version"));
  CHECK(contains(read_text(entry / "build.log"), "\"scale_unit.cuh\" -> "));

  const Resolution resolution = runtime.resolve("jit-tests", "saxpy");
  CHECK(resolution.kind == "images");
  CHECK(resolution.images.size() == images);
  REQUIRE(resolution.kernels.size() == 2);
  CHECK(resolution.kernels[1].name == "scale<float>");
  const json manifest = json::parse(read_text(fx.cache() / "consumers" / "jit-tests" / "manifest.json"));
  CHECK(manifest["artifacts"]["saxpy"]["kind"] == "images");

  // Not a plugin: Runtime::load says where to go instead.
  CHECK(contains(error_of([&] { runtime.load("jit-tests", "saxpy"); }), "load_kernels"));
  CHECK_THROWS_AS(runtime.ensure(fx.recipe()), UsageError);

  const BuildResult again = runtime.build(fx.recipe());
  CHECK(again.outcome == BuildResult::Outcome::hit);
  CHECK(again.content_key == first.content_key);
  CHECK(builder::jit_compile_count() == compiles + 1);  // no NVRTC compile at all
  const BuildPlan plan = runtime.plan(fx.recipe());
  CHECK(plan.state == "cached");
  CHECK(plan.backend == "nvrtc");
  CHECK(plan.nvcc.empty());
  CHECK(contains(plan.jit_toolchain, "nvrtc="));
}

TEST_CASE("jit build: a header edit rebuilds, a touch does not; the arch list and defines key the build") {
  jit();
  JitFixture fx;
  Runtime runtime(fx.options());
  const BuildResult first = runtime.build(fx.recipe());
  const std::uint64_t compiles = builder::jit_compile_count();

  SUBCASE("touched, same bytes: a hit") {
    const fs::path header = fx.src() / "include" / "scale_unit.cuh";
    fs::last_write_time(header, fs::last_write_time(header) + 5);
    CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::hit);
    CHECK(builder::jit_compile_count() == compiles);
  }
  SUBCASE("the header edited: rebuilt with a new content key") {
    write_text(fx.src() / "include" / "scale_unit.cuh", "__device__ inline float kiln_unit() { return 2.0f; }\n");
    const BuildResult rebuilt = runtime.build(fx.recipe());
    CHECK(rebuilt.outcome == BuildResult::Outcome::built);
    CHECK(rebuilt.content_key != first.content_key);
    CHECK(builder::jit_compile_count() == compiles + 1);
    CHECK(fx.entries() == 2);
  }
  SUBCASE("another arch list is another build") {
    BuildOptions sm90;
    sm90.archs = {Arch::parse("sm_90")};
    const BuildResult other = runtime.build(fx.recipe(), sm90);
    CHECK(other.content_key != first.content_key);
    CHECK(runtime.resolve("jit-tests", "saxpy").images.size() <= 2);
  }
  SUBCASE("a define changes the key; a changed recipe field that compiles the same reuses the entry") {
    fx.write_recipe(R"("sm_90", "sm_87", "compute_90")", R"(, "defines": ["UNUSED_BY_THE_SOURCE=1"])");
    const BuildResult defined = runtime.build(fx.recipe());
    CHECK(defined.content_key != first.content_key);
    fx.write_recipe(R"("sm_87", "sm_90", "compute_90")");  // same archs, another order: another input key
    const BuildResult reordered = runtime.build(fx.recipe());
    CHECK(reordered.outcome == BuildResult::Outcome::reused);
    CHECK(reordered.content_key == first.content_key);
  }
}

TEST_CASE("jit build: a compile error is a BuildError with NVRTC's log; nothing is published") {
  jit();
  JitFixture fx;
  Runtime runtime(fx.options());
  write_text(fx.src() / "kernels.cu", std::string(kSource) + "__global__ void broken() { undefined_symbol_here = 1; }\n");
  try {
    runtime.build(fx.recipe());
    FAIL("a broken source built");
  } catch (const BuildError &error) {
    CAPTURE(error.what());
    CHECK(contains(error.what(), "kernels.cu"));
    CHECK(contains(error.what(), "nothing was published"));
    CHECK(contains(error.log(), "undefined_symbol_here"));
  }
  CHECK(fx.entries() == 0);  // no entry and no staging directory
  CHECK_THROWS_AS(runtime.resolve("jit-tests", "saxpy"), NotFoundError);

  // A header NVRTC was not given: the message lists the ones it was.
  write_text(fx.src() / "kernels.cu", std::string("#include \"undeclared.cuh\"\n") + kSource);
  const std::string what = error_of([&] { runtime.build(fx.recipe()); });
  CAPTURE(what);
  CHECK(contains(what, "undeclared.cuh"));
  CHECK(contains(what, "headers given to NVRTC"));
  CHECK(contains(what, "scale_unit.cuh"));
  CHECK(fx.entries() == 0);

  write_text(fx.src() / "kernels.cu", kSource);
  CHECK(runtime.build(fx.recipe()).outcome == BuildResult::Outcome::built);
}

TEST_CASE("jit build: no nvcc anywhere (KILN_NVCC unset, PATH without it, no fallback) still builds an nvrtc recipe") {
  jit();
  JitFixture fx;
  ScopedEnv no_nvcc("KILN_NVCC", std::nullopt);
  ScopedEnv no_home("CUDA_HOME", std::string("/nonexistent"));
  ScopedEnv no_path("CUDA_PATH", std::nullopt);
  ScopedEnv path("PATH", std::string("/usr/bin:/bin"));
  ScopedEnv fallback("KILN_CUDA_FALLBACK_DIR", std::string("/nonexistent"));
  builder::reset_toolchain_memo_for_tests();
  CHECK_THROWS_AS(builder::find_nvcc(), NotFoundError);
  Runtime runtime(fx.options());
  CHECK(runtime.plan(fx.recipe()).state == "missing");
  const BuildResult built = runtime.build(fx.recipe());
  CHECK(built.outcome == BuildResult::Outcome::built);
  CHECK_FALSE(fs::exists(fx.cache() / "toolchain.json"));  // nvcc was never looked for
  builder::reset_toolchain_memo_for_tests();
}

TEST_CASE("jit build: generated headers reach NVRTC under their file names") {
  jit();
  JitFixture fx;
  write_text(fx.src() / "kernels.cu", std::string("#include \"gen_offset.h\"\n") + kSource);
  fx.write_recipe(R"("sm_90")", R"(, "generators": [{"name": "offset", "command": ["sh", "-c",
      "echo '#define GEN_OFFSET 3' > {gen}/gen_offset.h"], "outputs": ["gen_offset.h"], "tool_identity": "sh"}])");
  Runtime runtime(fx.options());
  const BuildResult generated = runtime.build(fx.recipe());
  CHECK(generated.outcome == BuildResult::Outcome::built);
  CHECK(fs::is_regular_file(fs::path(generated.entry_dir) / "gen" / "gen_offset.h"));
}

TEST_CASE("jit build: several sources link with LTO" * kiln::test::skip_if(kiln::test::no_nvjitlink)) {
  builder::NvrtcToolchain &toolchain = jit();
  JitFixture fx;
  Runtime runtime(fx.options());
  write_text(fx.src() / "apply.cu", "extern __device__ float twice(float);\n"
                                    "extern \"C\" __global__ void apply(float *v, int n) {\n"
                                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                    "  if (i < n) v[i] = twice(v[i]);\n}\n");
  write_text(fx.src() / "twice.cu", "__device__ float twice(float x) { return 2.0f * x; }\n");
  write_text(fx.src() / "lto.json", R"({"schema": 1, "consumer": "jit-tests", "name": "lto", "backend": "nvrtc",
    "sources": ["apply.cu", "twice.cu"], "archs": ["sm_90", "compute_90"], "lto": true,
    "kernels": [{"name": "apply", "source": "apply.cu"}]})");
  const BuildResult linked = runtime.build(Recipe::load((fx.src() / "lto.json").string()));
  CHECK(linked.outcome == BuildResult::Outcome::built);
  const Resolution resolution = runtime.resolve("jit-tests", "lto");
  REQUIRE(resolution.kernels.size() == 1);
  CHECK(resolution.kernels[0].lowered_name == "apply");
  CHECK(contains(resolution.identity.provenance.at("nvjitlink_version"), std::to_string(toolchain.nvjitlink().version)));
}

// --- loading, before any driver --------------------------------------------------------------

TEST_CASE("jit load: a damaged, truncated or swapped image is an IntegrityError before the driver sees it") {
  jit();
  JitFixture fx;
  Runtime runtime(fx.options());  // declared sm_90: the check picks sm_90.cubin without a driver
  const BuildResult built = runtime.build(fx.recipe());
  const fs::path cubin = fs::path(built.entry_dir) / "sm_90.cubin";
  KernelLoadReport report;

  SUBCASE("one byte changed: the digest") {
    damage(cubin, 100);
    ErrorKind kind = ErrorKind::other;
    const std::string what = error_of([&] { runtime.load_kernels("jit-tests", "saxpy", -1, &report); }, &kind);
    CAPTURE(what);
    CHECK(kind == ErrorKind::integrity);
    CHECK(contains(what, "sm_90.cubin"));
    CHECK(contains(what, "does not match its recorded digest"));
    // The next build does not trust the damaged entry: --force rebuilds it under its key.
    BuildOptions force;
    force.force = true;
    CHECK(runtime.build(fx.recipe(), force).content_key == built.content_key);
    for (const auto &image : runtime.resolve("jit-tests", "saxpy").images) {
      if (image.file == "sm_90.cubin") CHECK(files::digest_file(cubin) == image.digest);
    }
    const std::string after = error_of([&] { runtime.load_kernels("jit-tests", "saxpy"); }, &kind);
    CHECK_FALSE(contains(after, "digest"));  // verified now; a driver (or its absence) decides the rest
  }
  SUBCASE("verified by an earlier load, then altered: the change is noticed, the old bytes are not used") {
    ErrorKind kind = ErrorKind::other;
    const std::string before = error_of([&] { runtime.load_kernels("jit-tests", "saxpy"); }, &kind);
    CHECK_FALSE(contains(before, "digest"));  // verified (then loaded, or stopped at the driver)
    damage(cubin, 200);
    const std::string after = error_of([&] { runtime.load_kernels("jit-tests", "saxpy"); }, &kind);
    CHECK(kind == ErrorKind::integrity);
    CHECK(contains(after, "does not match its recorded digest"));
  }
  SUBCASE("truncated: the recorded size") {
    const std::string bytes = read_text(cubin);
    write_text(cubin, bytes.substr(0, bytes.size() / 2));
    const std::string what = error_of([&] { runtime.load_kernels("jit-tests", "saxpy"); });
    CHECK(contains(what, "were recorded"));
  }
  SUBCASE("a symlink in the entry is never followed") {
    fs::remove(cubin);
    fs::create_symlink(fs::path(built.entry_dir) / "sm_87.cubin", cubin);
    ErrorKind kind = ErrorKind::other;
    const std::string what = error_of([&] { runtime.load_kernels("jit-tests", "saxpy"); }, &kind);
    CHECK(kind == ErrorKind::integrity);
    CHECK(contains(what, "symlink"));
  }
  SUBCASE("an image for no arch of the device: refused with the arch reason") {
    RuntimeOptions options = fx.options();
    options.declared_device = "sm_75";
    Runtime old(options);
    try {
      old.load_kernels("jit-tests", "saxpy");
      FAIL("loaded on sm_75");
    } catch (const IncompatibleError &error) {
      REQUIRE(error.reasons().size() == 1);
      CHECK(error.reasons()[0].field == "cuda_arch");
      CHECK(error.reasons()[0].current == "sm_75");
    }
  }
}

TEST_CASE("jit load: without a driver the error says so, after the image was verified" *
          kiln::test::skip_if(kiln::test::cuda_driver)) {
  jit();
  JitFixture fx;
  Runtime runtime(fx.options());
  runtime.build(fx.recipe());
  ErrorKind kind = ErrorKind::usage;
  const std::string what = error_of([&] { runtime.load_kernels("jit-tests", "saxpy"); }, &kind);
  CAPTURE(what);
  CHECK(kind == ErrorKind::other);
  CHECK(contains(what, "sm_90.cubin verified"));
  CHECK(contains(what, "libcuda"));
  Runtime undeclared(fx.options(false));
  const std::string none = error_of([&] { undeclared.load_kernels_all("jit-tests", "saxpy"); }, &kind);
  CHECK(contains(none, "no CUDA device"));
}

// --- the CLI --------------------------------------------------------------------------------

TEST_CASE("jit cli: kiln build, show and load on an nvrtc recipe; doctor reports the JIT libraries") {
  builder::NvrtcToolchain &toolchain = jit();
  JitFixture fx;
  const std::map<std::string, std::string> env = {{"KILN_CACHE_DIR", fx.cache().string()}, {"KILN_DEVICE", "sm_90"}};
  auto result = kiln::test::run_kiln({"build", "--json", fx.recipe_file().string()}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["outcome"] == "built");
  result = kiln::test::run_kiln({"build", "--plan", fx.recipe_file().string()}, env);
  CHECK(contains(result.out, "cached"));
  CHECK(contains(result.out, "jit         nvrtc="));

  result = kiln::test::run_kiln({"show", "--json", "jit-tests", "saxpy"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json shown = json::parse(result.out);
  CHECK(shown["resolution"]["kind"] == "images");
  CHECK(shown["resolution"]["images"].size() >= 3);
  CHECK(shown["resolution"]["kernels"][1]["name"] == "scale<float>");
  CHECK(shown["checks"][0]["image"]["file"] == "sm_90.cubin");
  CHECK(contains(shown["checks"][0]["compatibility"]["how"], "exact SASS sm_90"));
  result = kiln::test::run_kiln({"show", "jit-tests", "saxpy"}, env);
  CHECK(contains(result.out, "image    compute_90.ptx (ptx compute_90"));
  CHECK(contains(result.out, "scale<float>  (_Z5scaleIf"));

  result = kiln::test::run_kiln({"load", "jit-tests", "saxpy"}, env);
  if (driver_present()) {
    CHECK_MESSAGE(result.exit_code == 0, result.err);
    CHECK(contains(result.out, "sm_90.cubin"));
  } else {
    CHECK(result.exit_code == 1);
    CHECK(contains(result.err, "sm_90.cubin verified"));
  }
  auto declared86 = env;
  declared86["KILN_DEVICE"] = "sm_86";
  result = kiln::test::run_kiln({"load", "--json", "jit-tests", "saxpy"}, declared86);
  CHECK(result.exit_code == 4);
  CHECK(json::parse(result.out)["error"]["reasons"][0]["field"] == "cuda_arch");

  result = kiln::test::run_kiln({"doctor", "--json"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json doctor = json::parse(result.out);
  CHECK(doctor["toolchain"]["nvrtc"]["found"] == true);
  CHECK(doctor["toolchain"]["nvrtc"]["version"] == toolchain.nvrtc().version_text());
  CHECK(doctor["toolchain"]["nvfatbin"].contains("searched"));
  CHECK(doctor["toolchain"]["nvrtc_archs"].size() > 0);
}

// --- kiln.host.kernels/1 ------------------------------------------------------------------

namespace {

using kiln::test::FakeHost;

struct FakeDriver {
  static CUcontext current;
  static int launches;
  static unsigned grid_x, block_x;
  static CUresult get_current(CUcontext *context) {
    *context = current;
    return CUDA_SUCCESS;
  }
  static CUresult set_current(CUcontext context) {
    current = context;
    return CUDA_SUCCESS;
  }
  static CUresult launch(CUfunction, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned,
                         CUstream, void **, void **) {
    ++launches;
    grid_x = gx;
    block_x = bx;
    return current == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
  }
};
CUcontext FakeDriver::current = nullptr;
int FakeDriver::launches = 0;
unsigned FakeDriver::grid_x = 0, FakeDriver::block_x = 0;

}  // namespace

TEST_CASE("host kernels: launch makes the function's context current and launches; get_driver_proc; errors") {
  static int fake_function = 0, fake_context = 0;
  load::HostKernelsService service(
      [](const load::KernelRequest &request) {
        if (request.kernel == "k") {
          return load::KernelAnswer{&fake_function, "sm_90 cubin: exact SASS sm_90", &fake_context};
        }
        throw NotFoundError("no kernel " + request.kernel);
      },
      [](const char *symbol, int version, std::string *why) -> void * {
        CHECK(version == CUDA_VERSION);
        if (std::strcmp(symbol, "cuCtxGetCurrent") == 0) return reinterpret_cast<void *>(&FakeDriver::get_current);
        if (std::strcmp(symbol, "cuCtxSetCurrent") == 0) return reinterpret_cast<void *>(&FakeDriver::set_current);
        if (std::strcmp(symbol, "cuLaunchKernel") == 0) return reinterpret_cast<void *>(&FakeDriver::launch);
        *why = std::string("the fake driver has no ") + symbol;
        return nullptr;
      });
  FakeHost fake;
  fake.service = &service;
  const auto *table = static_cast<const kiln_host_kernels_v1 *>(fake.host.get_service(&fake.host, KILN_HOST_KERNELS_SERVICE_ID));
  REQUIRE(table != nullptr);
  CHECK(table->struct_size >= KILN_HOST_KERNELS_V1_MIN_SIZE);
  const bool complete = table->launch != nullptr && table->get_driver_proc != nullptr;
  REQUIRE(complete);

  char message[256] = "";
  const std::uint32_t grid[3] = {4, 1, 1}, block[3] = {128, 1, 1};
  // Before any get_kernel on device 0: nothing to launch into.
  CHECK(table->launch(&fake.host, 0, &fake_function, grid, block, 0, nullptr, nullptr, message, sizeof message) ==
        KILN_ERR_STATE);
  CHECK(contains(message, "get_kernel first"));

  void *function = nullptr;
  REQUIRE(table->get_kernel(&fake.host, "c", "n", "k", 0, &function, message, sizeof message) == KILN_OK);
  FakeDriver::current = nullptr;
  CHECK(table->launch(&fake.host, 0, function, grid, block, 0, nullptr, nullptr, message, sizeof message) == KILN_OK);
  CHECK(FakeDriver::current == reinterpret_cast<CUcontext>(&fake_context));
  CHECK(FakeDriver::launches == 1);
  CHECK(FakeDriver::grid_x == 4);
  CHECK(FakeDriver::block_x == 128);
  CHECK(table->launch(&fake.host, 1, function, grid, block, 0, nullptr, nullptr, message, sizeof message) ==
        KILN_ERR_STATE);  // another device: no kernel loaded there
  const std::uint32_t empty[3] = {0, 1, 1};
  CHECK(table->launch(&fake.host, 0, function, empty, block, 0, nullptr, nullptr, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);
  CHECK(table->launch(&fake.host, 0, nullptr, grid, block, 0, nullptr, nullptr, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);
  CHECK(table->launch(&fake.host, -1, function, grid, block, 0, nullptr, nullptr, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);

  void *proc = nullptr;
  CHECK(table->get_driver_proc(&fake.host, "cuLaunchKernel", CUDA_VERSION, &proc, message, sizeof message) == KILN_OK);
  CHECK(proc == reinterpret_cast<void *>(&FakeDriver::launch));
  CHECK(table->get_driver_proc(&fake.host, "cuMemAlloc", CUDA_VERSION, &proc, message, sizeof message) == KILN_ERR_DEVICE);
  CHECK(proc == nullptr);
  CHECK(contains(message, "cuMemAlloc"));
  CHECK(table->get_driver_proc(&fake.host, nullptr, CUDA_VERSION, &proc, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);
}

namespace {

// The host-only plugin that asks for JIT kernels, loaded through a Runtime whose store holds
// jit-tests/saxpy (device images) and jit-tests/user (the plugin).
struct HostKernelsUser {
  JitFixture fx;
  Runtime runtime{fx.options(false)};
  std::optional<Module> module;
  std::optional<Instance> instance;
  const kiln_test_host_kernels_v1 *user = nullptr;

  HostKernelsUser() {
    jit();
    runtime.build(fx.recipe());
    PublishRequest request;
    request.consumer = "jit-tests";
    request.name = "user";
    request.artifact_file = KILN_TEST_PLUGIN_HOST_KERNELS_USER;
    runtime.publish(request);
    module.emplace(runtime.load("jit-tests", "user"));
    instance.emplace(module->create_instance());
    user = instance->interface<kiln_test_host_kernels_v1>(KILN_TEST_HOST_KERNELS_INTERFACE_ID);
    REQUIRE(user != nullptr);
  }
  kiln_instance *handle() const { return instance->handle(); }
};

}  // namespace

TEST_CASE("host kernels: a host-only plugin loaded through a Runtime asks for kernels that do not exist: refused") {
  HostKernelsUser host;
  const auto *user = host.user;
  char message[1024] = "";
  // Names and artifacts that do not exist: unsupported, with the store's words.
  CHECK(user->prepare(host.handle(), "jit-tests", "nothing", "saxpy", 0, message, sizeof message) ==
        KILN_ERR_UNSUPPORTED);
  CHECK(contains(message, "no artifact \"nothing\""));
  CHECK(user->prepare(host.handle(), "jit-tests", "user", "saxpy", 0, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);  // a plugin, not device images
  CHECK(contains(message, "not device images"));
  CHECK(user->prepare(host.handle(), "../x", "saxpy", "saxpy", 0, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);
}

TEST_CASE("host kernels: a loaded plugin still asks its Runtime's stores once that Runtime is gone") {
  JitFixture fx;
  std::optional<Runtime> runtime;
  runtime.emplace(fx.options(false));
  PublishRequest request;
  request.consumer = "jit-tests";
  request.name = "user";
  request.artifact_file = KILN_TEST_PLUGIN_HOST_KERNELS_USER;
  runtime->publish(request);
  const Module module = runtime->load("jit-tests", "user");
  const Instance instance = module.create_instance();
  const auto *user = instance.interface<kiln_test_host_kernels_v1>(KILN_TEST_HOST_KERNELS_INTERFACE_ID);
  REQUIRE(user != nullptr);
  runtime.reset();  // the plugin's kernel source holds the Runtime's state (its stores) on
  char message[1024] = "";
  // The first request makes the service; the store answers (a freed one would not, under ASan).
  CHECK(user->prepare(instance.handle(), "jit-tests", "nothing", "saxpy", 0, message, sizeof message) ==
        KILN_ERR_UNSUPPORTED);
  CHECK(contains(message, "no artifact \"nothing\""));
  CHECK(contains(message, "it has: user"));
}

TEST_CASE("host kernels: a host-only plugin asks for a JIT kernel; without a driver: KILN_ERR_DEVICE" *
          kiln::test::skip_if(kiln::test::cuda_driver)) {
  HostKernelsUser host;
  const auto *user = host.user;
  char message[1024] = "";
  const kiln_status status = user->prepare(host.handle(), "jit-tests", "saxpy", "saxpy", 0, message, sizeof message);
  CAPTURE(message);
  CHECK(status == KILN_ERR_DEVICE);
  CHECK(contains(message, "jit-tests/saxpy"));
  CHECK(contains(message, "libcuda"));
  CHECK(user->function(host.handle()) == nullptr);
  CHECK(user->probe_driver(host.handle(), "cuMemAlloc", message, sizeof message) == KILN_ERR_DEVICE);
  CHECK(contains(message, "libcuda"));
  float x = 1, y = 2;
  CHECK(user->saxpy(host.handle(), 1.0f, &x, &y, 1, message, sizeof message) == KILN_ERR_STATE);
}

// --- on a GPU -------------------------------------------------------------------------------

namespace {

// saxpy, then y *= 2 through "scale<float>" (its name expression); wrong elements.
int run(const KernelLibrary &library) { return kiln::test::run_saxpy(library, "scale<float>"); }

DeviceIdentity live() { return kiln::test::live_device(); }

std::string quoted_archs(const std::vector<std::string> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "\"" : ", \"") + arch + "\"";
  return text;
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("gpu jit artifact: ensure_kernels builds for the device, loads through the Runtime, kernels compute") {
    jit();
    const DeviceIdentity device = live();
    JitFixture fx(quoted_archs({device.arch_name(), "compute_" + std::to_string(device.cc_major * 10 + device.cc_minor)}));
    Runtime runtime(fx.options(false));
    KernelLoadReport report;
    const KernelLibrary library = runtime.ensure_kernels(fx.recipe(), {}, 0, &report);
    REQUIRE(report.loads.size() == 1);
    CHECK(report.loads[0].image.file == device.arch_name() + ".cubin");
    CHECK(contains(report.loads[0].choice.how, "exact SASS " + device.arch_name()));
    MESSAGE("ensure_kernels: verify " << report.timings.verify_ms << " ms, load " << report.timings.load_ms
                                      << " ms, kernels " << report.timings.kernels_ms << " ms");
    CHECK(library.kernel_names().size() == 2);
    CHECK(library.function("scale<float>") == library.function(report.resolution.kernels[1].lowered_name));
    CHECK(run(library) == 0);

    // Warm: another Runtime resolves, verifies and loads again; every device with its own choice.
    Runtime again(fx.options(false));
    KernelLoadReport all_report;
    const DeviceKernels all = again.load_kernels_all("jit-tests", "saxpy", {}, &all_report);
    CHECK(all.libraries.size() == static_cast<std::size_t>(device::Driver::instance().device_count()));
    for (const auto &each : all.libraries) CHECK(run(each) == 0);
    MESSAGE("warm load: resolve " << all_report.timings.resolve_ms << ", check " << all_report.timings.check_ms
                                  << ", verify " << all_report.timings.verify_ms << ", load " << all_report.timings.load_ms
                                  << ", kernels " << all_report.timings.kernels_ms << " ms");
    const auto cli = kiln::test::run_kiln({"load", "jit-tests", "saxpy"},
                                          {{"KILN_CACHE_DIR", fx.cache().string()}, {"KILN_DEVICE", ""}});
    CHECK_MESSAGE(cli.exit_code == 0, cli.err);
    CHECK(contains(cli.out, "device 0 "));
    CHECK(contains(cli.out, device.arch_name() + ".cubin"));
    CHECK(contains(cli.out, "kernels "));
  }

  TEST_CASE("gpu jit artifact: only sm_87 SASS (or sm_90 on an sm_87) is refused before use, with the arch reason") {
    jit();
    const DeviceIdentity device = live();
    const std::string other = device.cc_major == 8 && device.cc_minor == 7 ? "sm_90" : "sm_87";
    JitFixture fx(quoted_archs({other}));
    Runtime runtime(fx.options(false));
    runtime.build(fx.recipe());
    try {
      runtime.load_kernels("jit-tests", "saxpy");
      FAIL("loaded " << other << " SASS on " << device.arch_name());
    } catch (const IncompatibleError &error) {
      MESSAGE("refusal: " << std::string(error.what()));
      REQUIRE(error.reasons().size() == 1);
      CHECK(error.reasons()[0].field == "cuda_arch");
      CHECK(error.reasons()[0].recorded == other);
      CHECK(error.reasons()[0].current == device.arch_name());
    }
  }

  TEST_CASE("gpu jit artifact: SASS of an older major + its PTX loads through the PTX (compute_80 on 9.0)" *
            kiln::test::skip_if(kiln::test::no_ptx_jit)) {
    jit();
    const DeviceIdentity device = live();
    const int base = device.cc_major == 8 ? 75 : 80;
    JitFixture fx(quoted_archs({"sm_" + std::to_string(base), "compute_" + std::to_string(base)}));
    Runtime runtime(fx.options(false));
    runtime.build(fx.recipe());
    KernelLoadReport report;
    const KernelLibrary library = runtime.load_kernels("jit-tests", "saxpy", 0, &report);
    REQUIRE(report.loads.size() == 1);
    CHECK(report.loads[0].image.file == "compute_" + std::to_string(base) + ".ptx");
    CHECK(library.image().kind == "ptx");
    REQUIRE(library.choice().arch.has_value());
    CHECK(library.choice().arch->to_string() == "compute_" + std::to_string(base));
    CHECK(contains(library.choice().how, "PTX"));
    CHECK(run(library) == 0);
  }

  TEST_CASE("gpu jit artifact: PTX newer than the driver is refused at load (222)" * kiln::test::skip_if(kiln::test::ptx_jit)) {
    jit();
    const DeviceIdentity device = live();
    const int base = device.cc_major == 8 ? 75 : 80;
    JitFixture fx(quoted_archs({"sm_" + std::to_string(base), "compute_" + std::to_string(base)}));
    Runtime runtime(fx.options(false));
    runtime.build(fx.recipe());
    CHECK_THROWS_AS(runtime.load_kernels("jit-tests", "saxpy"), IncompatibleError);
  }

  TEST_CASE("gpu jit artifact: a corrupted image file is refused at load with a clear error, then --force repairs it") {
    jit();
    const DeviceIdentity device = live();
    JitFixture fx(quoted_archs({device.arch_name()}));
    Runtime runtime(fx.options(false));
    const BuildResult built = runtime.build(fx.recipe());
    const fs::path cubin = fs::path(built.entry_dir) / (device.arch_name() + ".cubin");
    damage(cubin, 64);
    ErrorKind kind = ErrorKind::other;
    const std::string what = error_of([&] { runtime.load_kernels("jit-tests", "saxpy"); }, &kind);
    MESSAGE("refusal: " << what);
    CHECK(kind == ErrorKind::integrity);
    CHECK(contains(what, cubin.string()));
    BuildOptions force;
    force.force = true;
    runtime.build(fx.recipe(), force);
    CHECK(run(runtime.load_kernels("jit-tests", "saxpy")) == 0);
  }

  TEST_CASE("gpu jit artifact: a host-only plugin runs a JIT kernel through kiln.host.kernels/1, after its Runtime is gone") {
    jit();
    const DeviceIdentity device = live();
    JitFixture fx(quoted_archs({device.arch_name()}));
    std::optional<Runtime> runtime(std::in_place, fx.options(false));
    runtime->build(fx.recipe());
    PublishRequest request;
    request.consumer = "jit-tests";
    request.name = "user";
    request.artifact_file = KILN_TEST_PLUGIN_HOST_KERNELS_USER;
    runtime->publish(request);
    Module module = runtime->load("jit-tests", "user");
    runtime.reset();  // the plugin's kernel service keeps the Runtime's state
    Instance instance = module.create_instance();
    instance.activate(0, 4096);
    const auto *user = instance.interface<kiln_test_host_kernels_v1>(KILN_TEST_HOST_KERNELS_INTERFACE_ID);
    REQUIRE(user != nullptr);
    char message[1024] = "";
    REQUIRE_MESSAGE(user->prepare(instance.handle(), "jit-tests", "saxpy", "saxpy", 0, message, sizeof message) == KILN_OK,
                    message);
    MESSAGE("get_kernel: " << message);
    CHECK(contains(message, "exact SASS"));
    const void *first = user->function(instance.handle());
    REQUIRE(first != nullptr);
    const int n = 3000;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i);
      y[i] = 1.0f;
    }
    REQUIRE_MESSAGE(user->saxpy(instance.handle(), 2.0f, x.data(), y.data(), n, message, sizeof message) == KILN_OK,
                    message);
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += y[i] != 2.0f * static_cast<float>(i) + 1.0f ? 1 : 0;
    CHECK(wrong == 0);
    // Asked again: the same function, nothing loaded again.
    REQUIRE(user->prepare(instance.handle(), "jit-tests", "saxpy", "saxpy", 0, message, sizeof message) == KILN_OK);
    CHECK(user->function(instance.handle()) == first);
    CHECK(user->prepare(instance.handle(), "jit-tests", "saxpy", "nope", 0, message, sizeof message) == KILN_ERR_UNSUPPORTED);
    CHECK(contains(message, "nope"));
    const int count = device::Driver::instance().device_count();
    CHECK(user->prepare(instance.handle(), "jit-tests", "saxpy", "saxpy", count, message, sizeof message) ==
          KILN_ERR_INVALID_ARGUMENT);
    CHECK(contains(message, "does not exist"));
  }
}
