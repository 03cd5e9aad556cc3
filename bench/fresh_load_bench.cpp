// A fresh process's load: what a controller pays at start-up to get its solver bound. Each run is
// a new process (the bench re-executes itself), timed inside it: kiln's Runtime construction +
// load of the ~1 MB test plugin (resolve, check, verify, dlopen, negotiate, bind) against two
// baselines doing the same job in fresh processes in the same run:
//   - PyTorch's cpp_extension.load warm hit of a one-kernel CUDA extension (bench/torch_warm_hit.py;
//     `import torch` not timed), the way Python robotics stacks load custom kernels today;
//   - a bare dlopen + dlsym of the same stored file (the floor: no checks at all).
// A controller's restart finds the file's verification record (written by the first process
// that loaded it once its ctime settled), so it does not hash the file; the first process after
// a build does, and is reported on its own line.
// The device check runs against a declared sm_90 so that cuInit (100-235 ms, paid by any CUDA
// user once) is in neither figure. A baseline that cannot run is reported as failed, never as a
// ratio.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/plugin.h>
#include <kiln/runtime.hpp>
#include "bench_stats.hpp"

namespace {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

using kiln_bench::median;

kiln::RuntimeOptions options_for(const std::string &cache) {
  kiln::RuntimeOptions options;
  options.cache_dir = cache;
  options.declared_device = "sm_90";
  return options;
}

// Child: one load, timed from before anything kiln runs; prints microseconds.
int child(const std::string &mode, const std::string &arg) {
  const auto start = Clock::now();
  if (mode == "kiln") {
    kiln::Runtime runtime(options_for(arg));
    kiln::Module module = runtime.load("bench", "example");
  } else {
    void *handle = ::dlopen(arg.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr || ::dlsym(handle, KILN_PLUGIN_NEGOTIATE_SYMBOL) == nullptr) return 1;
  }
  std::printf("%.3f\n", std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  return 0;
}

// Runs `command` and returns its first line of output ("" on failure).
std::string first_line(const std::string &command) {
  FILE *pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  char line[4096] = "";
  if (std::fgets(line, sizeof line, pipe) == nullptr) line[0] = '\0';
  ::pclose(pipe);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

std::vector<double> run_children(const char *self, const std::string &mode, const std::string &arg, int runs) {
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    const std::string line = first_line(std::string("'") + self + "' --child " + mode + " '" + arg + "'");
    if (line.empty()) return {};
    us.push_back(std::atof(line.c_str()));
  }
  return us;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 4 && std::strcmp(argv[1], "--child") == 0) return child(argv[2], argv[3]);
  const int runs = argc > 1 ? std::atoi(argv[1]) : 30;
  const int torch_runs = argc > 2 ? std::atoi(argv[2]) : 10;

  char pattern[] = "/tmp/kiln-bench-fresh-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  const std::string work = pattern, cache = work + "/cache";
  std::string file;
  {
    kiln::Runtime runtime(options_for(cache));
    kiln::PublishRequest request;
    request.consumer = "bench";
    request.name = "example";
    request.artifact_file = KILN_BENCH_PLUGIN;
    file = runtime.publish(request).file;
  }
  // A controller starts long after its artifact was built: let the file's ctime settle, so the
  // first load writes the verification record later processes use instead of hashing.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  run_children(argv[0], "kiln", cache, 3);  // page cache warm, as a controller's restart finds it
  const std::vector<double> kiln_us = run_children(argv[0], "kiln", cache, runs);
  const std::vector<double> bare_us = run_children(argv[0], "bare", file, runs);
  // The first process after a build: no record yet, so it hashes the file (and writes the record).
  std::vector<double> first_us;
  for (int i = 0; i < runs; ++i) {
    boost::system::error_code ignored;
    fs::remove_all(cache + "/verified", ignored);
    const std::vector<double> one = run_children(argv[0], "kiln", cache, 1);
    if (one.empty()) break;
    first_us.push_back(one.front());
  }

  // Torch: the first call of a fresh build directory compiles; later processes are warm hits.
  const char *python = std::getenv("KILN_BENCH_PYTHON");
  const std::string torch = std::string(python != nullptr && *python ? python : "python3") + " '" +
                            KILN_BENCH_TORCH_SCRIPT + "' '" + work + "' 2>&1";
  std::string torch_failure;
  std::vector<double> torch_ms;
  if (torch_runs > 0) {
    const std::string first = first_line(torch);
    if (first.rfind("ms ", 0) != 0) torch_failure = first.empty() ? "no output from " + torch : first;
  }
  for (int i = 0; torch_failure.empty() && i < torch_runs; ++i) {
    const std::string line = first_line(torch);
    if (line.rfind("ms ", 0) != 0) {
      torch_failure = line;
      break;
    }
    torch_ms.push_back(std::atof(line.c_str() + 3));
  }

  std::printf("kiln fresh-process load bench: plugin %s (%ju bytes), %d runs each (declared sm_90: no cuInit)\n",
              fs::path(file).filename().c_str(), static_cast<std::uintmax_t>(fs::file_size(file)), runs);
  if (kiln_us.empty() || bare_us.empty() || first_us.empty()) {
    std::printf("  FAILED: a child process did not report\n");
    return 1;
  }
  const double kiln_med = median(kiln_us), bare_med = median(bare_us);
  std::printf("  bare dlopen+dlsym, fresh process      median %8.1f us\n", bare_med);
  std::printf("  kiln Runtime + load, fresh process    median %8.1f us   (%.2fx bare; the file's verification record used)\n",
              kiln_med, kiln_med / bare_med);
  std::printf("  the same, first process after a build median %7.1f us   (no record yet: the file is hashed)\n",
              median(first_us));
  if (torch_runs <= 0) {
    std::printf("  torch cpp_extension.load warm hit     not run (torch_runs 0)\n");
    std::printf("{\"bench\":\"fresh_load\",\"kiln_us\":%.2f,\"kiln_first_us\":%.2f,\"bare_us\":%.2f,\"torch\":\"not run\"}\n",
                kiln_med, median(first_us), bare_med);
  } else if (!torch_failure.empty()) {
    std::printf("  torch cpp_extension.load warm hit     baseline FAILED: %s\n", torch_failure.c_str());
    std::printf("{\"bench\":\"fresh_load\",\"kiln_us\":%.2f,\"kiln_first_us\":%.2f,\"bare_us\":%.2f,\"torch\":\"failed\"}\n",
                kiln_med, median(first_us), bare_med);
  } else {
    const double torch_med = median(torch_ms);
    std::printf("  torch cpp_extension.load warm hit     median %8.1f us   (%d runs)\n", torch_med * 1000, torch_runs);
    std::printf("  kiln is %.1fx faster than the torch warm hit (goal >= 50x)\n", torch_med * 1000 / kiln_med);
    std::printf("  first process after a build: %.1fx faster than the torch warm hit\n", torch_med * 1000 / median(first_us));
    std::printf("{\"bench\":\"fresh_load\",\"kiln_us\":%.2f,\"kiln_first_us\":%.2f,\"bare_us\":%.2f,\"torch_us\":%.2f,"
                "\"speedup\":%.2f,\"speedup_first\":%.2f}\n",
                kiln_med, median(first_us), bare_med, torch_med * 1000, torch_med * 1000 / kiln_med,
                torch_med * 1000 / median(first_us));
  }
  boost::system::error_code ignored;
  fs::remove_all(work, ignored);
  return 0;
}
