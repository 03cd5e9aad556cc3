// JIT device images against their baselines, measured in the same run:
//
// 1. Build: a small kernel artifact built on miss by the nvrtc backend (NVRTC in process) against
//    the nvcc backend building the example plugin (nvcc subprocesses), each into a fresh cache,
//    for the same single arch, median of a few (after one unmeasured build of each: the nvcc
//    toolchain probe and the NVRTC dlopen are paid once per process). Goal: nvrtc >= 10x faster.
// 2. Warm load (needs a GPU): Runtime::load_kernels of the JIT artifact (resolve, check, verify
//    the chosen image, cuLibraryLoadData, resolve every kernel: cuLibraryGetKernel +
//    cuKernelGetFunction + cuFuncLoad) against bare cuLibraryLoadData + cuLibraryGetKernel of the
//    same cubin bytes held in memory; and, for reference, bare with the same per-kernel work as
//    kiln (+ cuKernelGetFunction + cuFuncLoad). Interleaved, unloaded each time, the device's
//    primary context held throughout (so no run pays context creation), median of many.
//    Goal: kiln <= 1.3x bare.
//
// Usage: kiln_bench_jit [build_runs (default 5)] [load_runs (default 300)]
#include <cuda.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/kernels.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/builder.hpp"
#include "builder/backends/nvrtc/toolchain.hpp"
#include "device/discover.hpp"
#include "device/driver.hpp"
#include "files/files.hpp"
#include "bench_stats.hpp"

#ifndef KILN_BENCH_PLUGIN_SOURCE
#error "KILN_BENCH_PLUGIN_SOURCE: the example plugin source (tests/plugins/example.cu) the nvcc backend builds"
#endif

namespace {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char *kKernels = R"(extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T>
__global__ void scale(T *v, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * factor;
}
)";

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

using kiln_bench::median;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kiln-bench-jit-XXXXXX").string();
    if (::mkdtemp(&pattern[0]) == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    path_ = pattern;
    fs::permissions(path_, fs::owner_all | fs::group_read | fs::group_exe | fs::others_read | fs::others_exe);
  }
  ~TempDir() {
    boost::system::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const fs::path &path() const { return path_; }

 private:
  fs::path path_;
};

kiln::RuntimeOptions options_for(const fs::path &cache, bool have_gpu) {
  kiln::RuntimeOptions options;
  options.cache_dir = cache.string();
  if (!have_gpu) options.declared_device = "sm_90";
  return options;
}

// One build into a fresh cache; milliseconds.
double timed_build(const kiln::Recipe &recipe, bool have_gpu) {
  TempDir cache;
  kiln::Runtime runtime(options_for(cache.path(), have_gpu));
  const auto start = Clock::now();
  const kiln::BuildResult result = runtime.build(recipe);
  const double ms = ms_since(start);
  if (result.outcome != kiln::BuildResult::Outcome::built) {
    std::fprintf(stderr, "expected a fresh build, got %s\n", kiln::to_string(result.outcome));
    std::exit(1);
  }
  return ms;
}

template <class Fn>
Fn need(kiln::device::Driver &driver, const char *name) {
  const auto fn = driver.proc_as<Fn>(name);
  if (fn == nullptr) {
    std::fprintf(stderr, "the driver offers no %s\n", name);
    std::exit(1);
  }
  return fn;
}

void check(CUresult result, const char *what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, kiln::device::Driver::builtin_error_text(result).c_str());
    std::exit(1);
  }
}

}  // namespace

int run(int argc, char **argv) {
  const int build_runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const int load_runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 300;

  const kiln::DeviceReport devices = kiln::device::discover(std::nullopt);
  const bool have_gpu = devices.state == kiln::DriverState::ok && !devices.devices.empty();
  const std::string arch = have_gpu ? devices.devices.front().arch_name() : "sm_90";
  const auto &jit = kiln::builder::NvrtcToolchain::instance();
  if (!jit.nvrtc().found) {
    std::fprintf(stderr, "NVRTC is needed: %s\n", jit.nvrtc().detail.c_str());
    return 1;
  }
  std::printf("kiln_bench_jit: %s, arch %s; %s; %s\n",
              have_gpu ? (devices.devices.front().name + " (driver " + std::to_string(devices.driver_version) + ")").c_str()
                       : "no GPU (declared sm_90)",
              arch.c_str(), jit.nvrtc().detail.c_str(),
              jit.nvfatbin().found ? "nvFatbin present (an images.fatbin is packaged too)" : "no nvFatbin");

  // --- 1. build on miss: nvrtc vs nvcc, fresh cache each ---
  TempDir sources;
  kiln::files::write_file_atomic(sources.path() / "kernels.cu", kKernels);
  kiln::files::write_file_atomic(sources.path() / "jit.json",
                                 R"({"schema": 1, "consumer": "bench", "name": "jit", "backend": "nvrtc",
    "sources": ["kernels.cu"], "archs": [")" + arch + R"("], "kernels": ["saxpy", "scale<float>"]})");
  kiln::files::write_file_atomic(sources.path() / "nvcc.json",
                                 R"({"schema": 1, "consumer": "bench", "name": "plugin", "sources": [")" +
                                     std::string(KILN_BENCH_PLUGIN_SOURCE) + R"("], "archs": [")" + arch +
                                     R"("], "artifact": "libexample.so", "flags": ["-O3"]})");
  const kiln::Recipe jit_recipe = kiln::Recipe::load((sources.path() / "jit.json").string());
  const kiln::Recipe nvcc_recipe = kiln::Recipe::load((sources.path() / "nvcc.json").string());
  bool have_nvcc = true;
  try {
    timed_build(nvcc_recipe, have_gpu);  // warm-up: nvcc --version probes, page cache
  } catch (const kiln::Error &error) {
    have_nvcc = false;
    std::printf("nvcc backend unavailable (%s): only the nvrtc build is timed\n", error.what());
  }
  timed_build(jit_recipe, have_gpu);  // warm-up: NVRTC's first program
  std::vector<double> nvrtc_ms, nvcc_ms;
  for (int i = 0; i < build_runs; ++i) {
    nvrtc_ms.push_back(timed_build(jit_recipe, have_gpu));
    if (have_nvcc) nvcc_ms.push_back(timed_build(nvcc_recipe, have_gpu));
  }
  std::printf("\nbuild on miss, fresh cache, %s, median of %d:\n", arch.c_str(), build_runs);
  std::printf("  nvrtc backend (2 kernels, NVRTC in process)          %9.1f ms\n", median(nvrtc_ms));
  if (have_nvcc) {
    std::printf("  nvcc backend (example plugin, nvcc -c + nvcc --shared) %7.1f ms\n", median(nvcc_ms));
    std::printf("  nvcc / nvrtc = %.1fx (goal >= 10x)\n", median(nvcc_ms) / median(nvrtc_ms));
  }

  // --- 2. warm load ---
  if (!have_gpu) {
    std::printf("\nwarm load: needs a CUDA device (%s); run this on a GPU machine for the load figures\n",
                devices.detail.c_str());
    return 0;
  }
  TempDir cache;
  kiln::Runtime runtime(options_for(cache.path(), true));
  const kiln::BuildResult built = runtime.build(jit_recipe);
  const kiln::Resolution resolution = runtime.resolve("bench", "jit");
  std::string cubin;
  for (const auto &image : resolution.images) {
    if (image.file == arch + ".cubin") cubin = kiln::files::read_file(fs::path(built.entry_dir) / image.file);
  }
  if (cubin.empty()) {
    std::fprintf(stderr, "no %s.cubin in %s\n", arch.c_str(), built.entry_dir.c_str());
    return 1;
  }
  std::vector<std::string> names;
  for (const auto &kernel : resolution.kernels) names.push_back(kernel.lowered_name);

  auto &driver = kiln::device::Driver::instance();
  const auto retain = need<decltype(&::cuDevicePrimaryCtxRetain)>(driver, "cuDevicePrimaryCtxRetain");
  const auto release = need<decltype(&::cuDevicePrimaryCtxRelease)>(driver, "cuDevicePrimaryCtxRelease");
  const auto set_current = need<decltype(&::cuCtxSetCurrent)>(driver, "cuCtxSetCurrent");
  const auto load_data = need<decltype(&::cuLibraryLoadData)>(driver, "cuLibraryLoadData");
  const auto unload = need<decltype(&::cuLibraryUnload)>(driver, "cuLibraryUnload");
  const auto get_kernel = need<decltype(&::cuLibraryGetKernel)>(driver, "cuLibraryGetKernel");
  const auto get_function = need<decltype(&::cuKernelGetFunction)>(driver, "cuKernelGetFunction");
  const auto func_load = driver.proc_as<decltype(&::cuFuncLoad)>("cuFuncLoad");
  CUdevice device = 0;
  check(driver.api().device_get(&device, 0), "cuDeviceGet");
  CUcontext context = nullptr;
  check(retain(&context, device), "cuDevicePrimaryCtxRetain");  // held: no run creates the context
  check(set_current(context), "cuCtxSetCurrent");

  const auto bare = [&](bool same_work) {
    const auto start = Clock::now();
    CUlibrary library = nullptr;
    check(load_data(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData");
    for (const auto &name : names) {
      CUkernel kernel = nullptr;
      check(get_kernel(&kernel, library, name.c_str()), "cuLibraryGetKernel");
      if (same_work) {
        CUfunction function = nullptr;
        check(get_function(&function, kernel), "cuKernelGetFunction");
        if (func_load != nullptr) check(func_load(function), "cuFuncLoad");
      }
    }
    const double ms = ms_since(start);
    check(unload(library), "cuLibraryUnload");
    return ms;
  };
  std::vector<double> steps[5];
  const auto kiln_load = [&](bool with_report) {
    kiln::KernelLoadReport report;
    const auto start = Clock::now();
    const kiln::KernelLibrary library = runtime.load_kernels("bench", "jit", 0, with_report ? &report : nullptr);
    const double ms = ms_since(start);
    if (with_report) {
      steps[0].push_back(report.timings.resolve_ms);
      steps[1].push_back(report.timings.check_ms);
      steps[2].push_back(report.timings.verify_ms);
      steps[3].push_back(report.timings.load_ms);
      steps[4].push_back(report.timings.kernels_ms);
    }
    return ms;  // the unload (library's destructor) is not timed, as for bare
  };
  for (int i = 0; i < 10; ++i) {  // warm-up: first loads, driver caches
    bare(false);
    bare(true);
    kiln_load(false);
  }
  std::vector<double> bare_ms, bare_same_ms, kiln_ms;
  for (int i = 0; i < load_runs; ++i) {
    bare_ms.push_back(bare(false));
    kiln_ms.push_back(kiln_load(false));
    bare_same_ms.push_back(bare(true));
  }
  for (int i = 0; i < std::max(10, load_runs / 3); ++i) kiln_load(true);  // where kiln's time goes
  release(device);
  const double b = median(bare_ms), s = median(bare_same_ms), k = median(kiln_ms);
  std::printf("\nwarm load of the JIT artifact (%s.cubin, %zu bytes, %zu kernels), median of %d, unloaded each time:\n",
              arch.c_str(), cubin.size(), names.size(), load_runs);
  std::printf("  bare cuLibraryLoadData + cuLibraryGetKernel            %8.1f us\n", b * 1000);
  std::printf("  bare + cuKernelGetFunction + cuFuncLoad (kiln's work)  %8.1f us\n", s * 1000);
  std::printf("  kiln Runtime::load_kernels                             %8.1f us\n", k * 1000);
  std::printf("    its steps (medians, another %d runs): resolve %.1f, check %.1f, verify %.1f, load %.1f, kernels %.1f us\n",
              std::max(10, load_runs / 3),
              median(steps[0]) * 1000, median(steps[1]) * 1000, median(steps[2]) * 1000, median(steps[3]) * 1000,
              median(steps[4]) * 1000);
  std::printf("  kiln / bare = %.2fx (goal <= 1.3x); kiln / same work = %.2fx\n", k / b, k / s);
  return 0;
}

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "kiln_bench_jit: %s\n", error.what());
    return 1;
  }
}
