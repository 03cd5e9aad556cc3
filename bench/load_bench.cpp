// Warm load: kiln's full load path (resolve, check, verify digest, dlopen, negotiate, bind,
// unload) against a bare dlopen + dlsym + dlclose of the same stored file (the same flags,
// RTLD_NOW | RTLD_LOCAL), interleaved in one process, median of many; and, to split the
// overhead, the system calls kiln's design makes around that dlopen alone (design_floor_load).
// Then the peak memory (VmHWM) a loading process adds over a process that only does the bare
// dlopen: the same binary re-executed in each mode, so the program's own size cancels out.
// With a GPU the driver is initialised first in both modes (the plugin would initialise it
// anyway); without one a declared sm_90 device stands in.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/plugin.h>
#include <kiln/runtime.hpp>

#include "device/discover.hpp"
#include "bench_stats.hpp"

namespace {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

using kiln_bench::median;

long vm_hwm_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

kiln::RuntimeOptions options_for(const std::string &cache, bool have_gpu) {
  kiln::RuntimeOptions options;
  options.cache_dir = cache;
  if (!have_gpu) options.declared_device = "sm_90";
  return options;
}

void bare_load(const std::string &file) {
  void *handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr || ::dlsym(handle, KILN_PLUGIN_NEGOTIATE_SYMBOL) == nullptr) {
    std::fprintf(stderr, "bare dlopen failed: %s\n", ::dlerror());
    std::exit(1);
  }
  ::dlclose(handle);
}

// What kiln's design adds around the same dlopen on a warm load, with none of kiln's code: the
// identity checks of the remembered resolution (a stat of the manifest and of the entry's
// meta.json, by path), then on the descriptor kept from the last load the gc
// in-use flock and one fstat, dlopen through its /proc/self/fd name, and the lock released
// after the dlclose. Not the goal's baseline (that is bare_load): it splits the overhead into
// what these system calls cost and what kiln's own work costs.
struct DesignFloor {
  int kept = -1;
  std::string manifest, meta;
  explicit DesignFloor(const std::string &file) {
    const fs::path entry = fs::path(file).parent_path();  // <consumer>/store/<key>/<file>
    meta = (entry / "meta.json").string();
    manifest = (entry.parent_path().parent_path() / "manifest.json").string();
    kept = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (kept < 0) {
      std::fprintf(stderr, "cannot open the store files of %s\n", file.c_str());
      std::exit(1);
    }
  }
};

void design_floor_load(const DesignFloor &floor) {
  struct stat info {};
  if (::stat(floor.manifest.c_str(), &info) != 0 || ::stat(floor.meta.c_str(), &info) != 0 ||
      ::flock(floor.kept, LOCK_SH | LOCK_NB) != 0 || ::fstat(floor.kept, &info) != 0) {
    std::fprintf(stderr, "the design floor's system calls failed\n");
    std::exit(1);
  }
  void *handle = ::dlopen(("/proc/self/fd/" + std::to_string(floor.kept)).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr || ::dlsym(handle, KILN_PLUGIN_NEGOTIATE_SYMBOL) == nullptr) {
    std::fprintf(stderr, "dlopen through the descriptor failed: %s\n", ::dlerror());
    std::exit(1);
  }
  ::dlclose(handle);
  ::flock(floor.kept, LOCK_UN);
}

// Child mode: one load of one kind, then report VmHWM.
int memory_child(const std::string &mode, const std::string &cache, const std::string &file, bool have_gpu) {
  if (have_gpu) kiln::device::discover(std::nullopt);  // driver initialised in both modes
  if (mode == "bare") {
    void *handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr || ::dlsym(handle, KILN_PLUGIN_NEGOTIATE_SYMBOL) == nullptr) return 1;
  } else {
    kiln::Runtime runtime(options_for(cache, have_gpu));
    kiln::Module module = runtime.load("bench", "example");
    std::printf("%ld\n", vm_hwm_kib());
    return 0;
  }
  std::printf("%ld\n", vm_hwm_kib());
  return 0;
}

long run_child(const char *self, const std::string &mode, const std::string &cache, const std::string &file,
               bool have_gpu) {
  const std::string command = std::string("'") + self + "' --memory-child " + mode + " '" + cache + "' '" + file +
                              "' " + (have_gpu ? "1" : "0");
  FILE *pipe = ::popen(command.c_str(), "r");
  long kib = -1;
  if (pipe != nullptr) {
    if (std::fscanf(pipe, "%ld", &kib) != 1) kib = -1;
    ::pclose(pipe);
  }
  return kib;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 6 && std::strcmp(argv[1], "--memory-child") == 0) {
    return memory_child(argv[2], argv[3], argv[4], std::strcmp(argv[5], "1") == 0);
  }
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 300;

  char pattern[] = "/tmp/kiln-bench-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  const std::string cache = std::string(pattern) + "/cache";

  const kiln::DeviceReport report = kiln::device::discover(std::nullopt);
  const bool have_gpu = report.state == kiln::DriverState::ok;
  kiln::Runtime runtime(options_for(cache, have_gpu));
  kiln::PublishRequest request;
  request.consumer = "bench";
  request.name = "example";
  // KILN_BENCH_LOAD_PLUGIN: the test plugin where the bench runs away from its build tree.
  const char *plugin = std::getenv("KILN_BENCH_LOAD_PLUGIN");
  request.artifact_file = plugin != nullptr && *plugin != '\0' ? plugin : KILN_BENCH_PLUGIN;
  const kiln::PublishResult published = runtime.publish(request);
  const std::string file = published.file;

  // Warm up both paths (page cache, driver, first-time symbol resolution).
  for (int i = 0; i < 20; ++i) {
    bare_load(file);
    kiln::Module warm = runtime.load("bench", "example");
  }
  std::vector<double> bare, kiln_load;
  kiln::LoadTimings sum;
  for (int i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    bare_load(file);
    bare.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    start = Clock::now();
    {
      kiln::Module module = runtime.load("bench", "example");
      const auto &t = module.report().timings;
      sum.resolve_ms += t.resolve_ms, sum.check_ms += t.check_ms, sum.verify_ms += t.verify_ms;
      sum.dlopen_ms += t.dlopen_ms, sum.bind_ms += t.bind_ms;
    }
    kiln_load.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  const double bare_us = median(bare), kiln_us = median(kiln_load);
  // Then the descriptor floor against bare, interleaved the same way (a loop of its own, so the
  // kiln figures above stay comparable with earlier runs).
  std::vector<double> bare_again, floor;
  const DesignFloor design(file);
  for (int i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    bare_load(file);
    bare_again.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    start = Clock::now();
    design_floor_load(design);
    floor.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  const double floor_ratio = median(floor) / median(bare_again);
  const long bare_kib = run_child(argv[0], "bare", cache, file, have_gpu);
  const long kiln_kib = run_child(argv[0], "kiln", cache, file, have_gpu);

  std::printf("kiln load bench: %s, plugin %s (%ju bytes), %d iterations\n",
              have_gpu ? (report.devices.front().name + " " + report.devices.front().arch_name()).c_str()
                       : "no GPU (declared sm_90)",
              fs::path(file).filename().c_str(), static_cast<std::uintmax_t>(fs::file_size(file)), iterations);
  std::printf("  bare dlopen+dlsym+dlclose   median %8.1f us\n", bare_us);
  std::printf("  kiln load (+unload)         median %8.1f us   ratio %.2fx (goal <= 1.10x)\n", kiln_us,
              kiln_us / bare_us);
  const double n = iterations;
  std::printf("    mean steps (us): resolve %.1f  check %.1f  verify %.1f  dlopen %.1f  bind %.1f\n",
              1000 * sum.resolve_ms / n, 1000 * sum.check_ms / n, 1000 * sum.verify_ms / n,
              1000 * sum.dlopen_ms / n, 1000 * sum.bind_ms / n);
  std::printf("  design floor              median %8.1f us   ratio %.2fx (stat manifest + meta.json, flock+fstat "
              "of the kept descriptor, /proc/self/fd dlopen, unlock; vs bare %.1f us)\n",
              median(floor), floor_ratio, median(bare_again));
  std::printf("  peak RSS: bare %ld KiB, kiln %ld KiB, added %ld KiB (goal <= 2048 KiB)\n", bare_kib, kiln_kib,
              kiln_kib - bare_kib);
  std::printf("{\"bench\":\"load\",\"bare_us\":%.2f,\"kiln_us\":%.2f,\"ratio\":%.3f,\"added_peak_kib\":%ld,"
              "\"floor_ratio\":%.3f}\n",
              bare_us, kiln_us, kiln_us / bare_us, kiln_kib - bare_kib, floor_ratio);
  boost::system::error_code ignored;
  fs::remove_all(pattern, ignored);
  return 0;
}
