#include "reliability/workspace.hpp"

#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <mutex>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "builder/backends/nvrtc/toolchain.hpp"
#include "support/fixtures.hpp"

namespace kiln::reliability {
namespace {

const fs::path kSourceDir = fs::path(KILN_TEST_SOURCE_DIR);

// The kernel of NVRTC recipes: VARIANT changes the code, hence the keys.
constexpr const char *kKernels = R"(extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] + VARIANT;
}
)";

}  // namespace

const Toolchains &toolchains() {
  static const Toolchains found = [] {
    Toolchains t;
    const builder::NvrtcToolchain &jit = builder::NvrtcToolchain::instance();
    t.nvrtc = jit.nvrtc().found;
    t.nvrtc_detail = jit.nvrtc().detail;
    // Where kiln's own search (src/builder/toolchain.cpp) looks without KILN_NVCC.
    std::vector<std::string> candidates;
    for (const char *home : {"CUDA_HOME", "CUDA_PATH"}) {
      if (const char *dir = std::getenv(home); dir != nullptr && *dir != '\0') candidates.push_back(std::string(dir) + "/bin/nvcc");
    }
    candidates.push_back("/usr/local/cuda/bin/nvcc");
    for (const auto &candidate : candidates) {
      if (t.nvcc.empty() && ::access(candidate.c_str(), X_OK) == 0) t.nvcc = candidate;
    }
    return t;
  }();
  return found;
}

const char *to_string(Backend backend) {
  switch (backend) {
    case Backend::fake_nvcc: return "fake-nvcc";
    case Backend::nvrtc: return "nvrtc";
    case Backend::real_nvcc: return "nvcc";
  }
  return "?";
}

Workspace::Workspace(fs::path root) : root_(std::move(root)) { fs::create_directories(root_ / "recipes"); }

std::map<std::string, std::string> Workspace::env() const {
  return {{"KILN_CACHE_DIR", store().string()},
          {"KILN_STORE_PATH", ""},
          {"KILN_DEVICE", "sm_90"},
          {"KILN_FAULT", ""},
          {"KILN_TEST_NVCC_LOG", compile_log().string()},
          {"KILN_TEST_FAKE_PLUGIN", KILN_TEST_PLUGIN_HOST_ONLY},
          {"KILN_TEST_REAL_NVCC", toolchains().nvcc}};
}

std::vector<std::string> Workspace::kiln(std::vector<std::string> args) const {
  args.insert(args.begin(), KILN_CLI_PATH);
  return args;
}

Op Workspace::publish(const std::string &name, const std::string &variant, const std::string &consumer) const {
  Op op;
  op.label = "publish " + consumer + "/" + name + " (variant " + variant + ")";
  op.argv = kiln({"publish", "--json", "--consumer", consumer, "--name", name, "--artifact", KILN_TEST_PLUGIN_HOST_ONLY,
                  "--arch", "none"});
  if (variant != "none") {
    std::string digits;
    for (const char c : variant) {
      if (c >= '0' && c <= '9') digits += c;
    }
    op.argv.insert(op.argv.end(), {"--cuda-toolkit", std::to_string(12000 + std::stoi(digits))});
  }
  op.env = env();
  op.consumer = consumer;
  op.name = name;
  return op;
}

fs::path Workspace::recipe(Backend backend, const std::string &name, int variant, const std::string &consumer) const {
  const fs::path dir = root_ / "recipes" / (consumer + "-" + name + "-" + to_string(backend) + "-" + std::to_string(variant));
  const fs::path file = dir / "recipe.json";
  // Threads of the concurrency test ask at once: a recipe directory is written once, whole,
  // before anyone builds from it (a source copied over while hashed would be another key).
  static std::mutex writing;
  std::lock_guard<std::mutex> lock(writing);
  if (fs::exists(file)) return file;
  fs::create_directories(dir);
  nlohmann::json recipe;
  if (backend == Backend::nvrtc) {
    test::write_text(dir / "kernels.cu", kKernels);
    recipe = {{"schema", 1},          {"consumer", consumer},    {"name", name},
              {"backend", "nvrtc"},   {"sources", {"kernels.cu"}}, {"archs", {"sm_90"}},
              {"kernels", {"saxpy"}}, {"defines", {"VARIANT=" + std::to_string(variant)}}};
  } else {
    // tests/data/build: two units (plugin.cu, helper.cpp), a header and a generator.
    for (fs::directory_iterator it(kSourceDir / "tests" / "data" / "build"), end; it != end; ++it) {
      fs::copy_file(it->path(), dir / it->path().filename(), fs::copy_options::overwrite_existing);
    }
    recipe = nlohmann::json::parse(test::read_text(dir / "recipe.json"));
    recipe["consumer"] = consumer;
    recipe["name"] = name;
    // Each name and variant compiles to its own content: equal content under two input keys
    // would be shared (outcome "reused"), legitimately compiled by both keys' builders at once.
    recipe["defines"].push_back("VARIANT=" + std::to_string(variant));
    recipe["defines"].push_back("RECIPE_ID=" + std::to_string(std::hash<std::string>()(consumer + "/" + name) % 1000000));
  }
  const fs::path temp = dir / "recipe.json.tmp";
  test::write_text(temp, recipe.dump(2));
  fs::rename(temp, file);  // other threads may read it as soon as it exists
  return file;
}

Op Workspace::build(Backend backend, const std::string &name, int variant, const std::string &consumer) const {
  Op op;
  const fs::path file = recipe(backend, name, variant, consumer);
  op.label = std::string("build ") + consumer + "/" + name + " variant " + std::to_string(variant) + " (" +
             to_string(backend) + ")";
  op.argv = kiln({"build", "--json", file.string()});
  op.env = env();
  if (backend == Backend::fake_nvcc) op.env["KILN_NVCC"] = (kSourceDir / "tests" / "reliability" / "fake-nvcc.sh").string();
  if (backend == Backend::real_nvcc) op.env["KILN_NVCC"] = (kSourceDir / "tests" / "data" / "build" / "nvcc-wrapper.sh").string();
  op.consumer = consumer;
  op.name = name;
  return op;
}

}  // namespace kiln::reliability
