// kiln_bench_storm: the GEMM storm of storm_gemm.hpp in a process of its own, for
// kiln_bench_isolation's "other process" rows.
//
//   kiln_bench_storm --seconds S [--device D] [--gemm N]
//     prints "running" once the first GEMM completed, stops after S seconds or at SIGTERM/SIGINT.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "storm_gemm.hpp"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) { g_stop.store(true); }

int usage() {
  std::fprintf(stderr, "usage: kiln_bench_storm --seconds S [--device D] [--gemm N]\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  double seconds = 0;
  kiln_bench::storm::Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) return usage();
    const char *value = argv[++i];
    if (key == "--seconds") seconds = std::atof(value);
    else if (key == "--device") config.device = std::atoi(value);
    else if (key == "--gemm") config.n = std::atoi(value);
    else return usage();
  }
  if (seconds <= 0 || config.n < 64) return usage();
  struct sigaction action{};
  action.sa_handler = on_signal;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);

  kiln_bench::storm::Progress progress;
  std::thread storm([&] { kiln_bench::storm::run(config, g_stop, progress); });
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  bool announced = false;
  while (!g_stop.load() && !progress.finished.load() && std::chrono::steady_clock::now() < end) {
    if (!announced && progress.running.load()) {
      std::printf("running\n");  // the bench waits for this line before it times anything
      std::fflush(stdout);
      announced = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  g_stop.store(true);
  storm.join();
  if (!progress.error.empty()) {
    std::fprintf(stderr, "kiln_bench_storm: %s\n", progress.error.c_str());
    return 1;
  }
  std::fprintf(stderr, "kiln_bench_storm: %llu GEMMs of %d^3\n", static_cast<unsigned long long>(progress.launches.load()),
               (config.n + 63) / 64 * 64);
  return 0;
}
