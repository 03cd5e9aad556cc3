// The cmake backend, measured against baselines in the same run (docs/benchmarks.md "kiln_bench_cmake_build"):
//  (a) an unchanged `ensure` of a cmake recipe: its time, and whether it spawned any process
//      (cmake runs through a logging wrapper; the generator logs each run);
//  (b) a forced one-job build against the very same two cmake commands (from build.log) run
//      directly by a shell in a scratch directory, alternating which goes first, median of 5
//      rounds each; and kiln's own time outside those two commands (what the overhead is made of).
// The project is a C++ kiln plugin of 4 units (no CUDA: the figure is kiln's overhead, not nvcc's).
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>
#include "bench_files.hpp"
#include "bench_stats.hpp"

namespace {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

using kiln_bench::median;

using kiln_bench::count_lines;

// A unit that takes the compiler about a second: container and algorithm instantiations.
std::string unit(int index) {
  return "#include <algorithm>\n#include <map>\n#include <string>\n#include <vector>\n"
         "double unit_" + std::to_string(index) + "(const std::vector<std::string> &words) {\n"
         "  std::map<std::string, std::vector<double>> seen;\n"
         "  for (const auto &word : words) seen[word].push_back(static_cast<double>(word.size()));\n"
         "  std::vector<std::pair<std::string, double>> sorted;\n"
         "  for (auto &[word, sizes] : seen) sorted.emplace_back(word, sizes.front());\n"
         "  std::stable_sort(sorted.begin(), sorted.end(), [](auto &a, auto &b) { return a.second < b.second; });\n"
         "  return static_cast<double>(sorted.size()) + " + std::to_string(index) + ";\n}\n";
}

void make_project(const fs::path &dir) {
  fs::create_directories(dir / "module");
  fs::create_directories(dir / "recipes");
  kiln_bench::write_file(dir / "module" / "CMakeLists.txt", R"(cmake_minimum_required(VERSION 3.18)
project(kiln_bench_cmake LANGUAGES CXX)
add_library(kiln_bench MODULE plugin.cpp unit1.cpp unit2.cpp unit3.cpp)
target_compile_features(kiln_bench PRIVATE cxx_std_17)
target_include_directories(kiln_bench PRIVATE "${KILN_ABI_DIR}" "${KILN_GEN_DIR}")
target_compile_definitions(kiln_bench PRIVATE "KILN_BENCH_N=${KILN_BENCH_N}")
set_target_properties(kiln_bench PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_compile_options(kiln_bench PRIVATE -fno-gnu-unique)
# std:: templates keep default visibility whatever the preset: the version script hides them.
target_link_options(kiln_bench PRIVATE "LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/exports.map")
)");
  kiln_bench::write_file(dir / "module" / "exports.map", "{ global: kiln_plugin_negotiate; local: *; };\n");
  kiln_bench::write_file(dir / "module" / "plugin.cpp", R"(#include <kiln/plugin.hpp>
#include "bench_values.h"
static_assert(KILN_BENCH_N + BENCH_VALUE > 0, "the option and the generated header reach the compiler");
namespace {
class BenchInstance final : public kiln::plugin::Instance {
 public:
  using Instance::Instance;
  const void *get_interface(const char *) const noexcept override { return nullptr; }
};
}
KILN_PLUGIN(BenchInstance, "org.kiln.bench.cmake", "1.0.0", "kiln.bench/1")
)");
  for (int i = 1; i <= 3; ++i) kiln_bench::write_file(dir / "module" / ("unit" + std::to_string(i) + ".cpp"), unit(i));
  kiln_bench::write_file(dir / "recipes" / "values.txt", "7\n");
  kiln_bench::write_file(dir / "recipes" / "gen.sh", "#!/bin/sh\necho run >> \"$KILN_BENCH_SPAWN_LOG\"\n"
                                    "printf '#define BENCH_VALUE %s\\n' \"$(head -n 1 \"$1\")\" > \"$2/bench_values.h\"\n");
  kiln_bench::write_file(dir / "recipes" / "cmake-log.sh", "#!/bin/sh\necho \"$*\" >> \"$KILN_BENCH_SPAWN_LOG\"\nexec cmake \"$@\"\n");
  for (const char *script : {"gen.sh", "cmake-log.sh"}) {
    fs::permissions(dir / "recipes" / script, fs::owner_all | fs::group_read | fs::others_read);
  }
  kiln_bench::write_file(dir / "recipes" / "recipe.json", R"({
  "schema": 1, "consumer": "bench", "name": "cmake-bench", "backend": "cmake",
  "project": "../module", "project_files": ["CMakeLists.txt", "*.cpp", "*.map"],
  "cmake_options": {"KILN_BENCH_N": "64"}, "target": "kiln_bench", "output": "libkiln_bench.so",
  "artifact": "libkiln_bench_N64.so", "archs": ["sm_90"],
  "generators": [{"name": "values", "command": ["sh", "gen.sh", "values.txt", "{gen}"],
                  "inputs": ["values.txt"], "outputs": ["bench_values.h"], "tool": "gen.sh"}]
})");
}

// The configure and build commands of a build.log ("$ " lines after the generator's), with the
// staging directory they name replaced by `scratch`.
std::string replay_script(const std::string &log, const fs::path &entry, const fs::path &scratch) {
  const std::string prefix = (entry.parent_path() / ".staging-").string();
  std::istringstream lines(log);
  std::string script = "set -e\n", staging;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("$ ", 0) != 0 || line.rfind("$ (generator", 0) == 0) continue;
    std::string command = line.substr(2);
    const std::size_t at = command.find(prefix);
    if (staging.empty() && at != std::string::npos) staging = command.substr(at, command.find('/', at + prefix.size()) - at);
    for (std::size_t next = staging.empty() ? std::string::npos : command.find(staging); next != std::string::npos;
         next = command.find(staging, next)) {
      command.replace(next, staging.size(), scratch.string());
    }
    script += command + " >/dev/null\n";
  }
  return script;
}

}  // namespace

int main() {
  char pattern[] = "/tmp/kiln-cmake-bench-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  const fs::path dir(pattern), spawn_log = dir / "spawned.log";
  make_project(dir);
  ::setenv("KILN_CACHE_DIR", (dir / "cache").c_str(), 1);
  ::setenv("KILN_DEVICE", "sm_90", 0);  // a declared device: no driver work in a build bench
  ::setenv("KILN_CMAKE", (dir / "recipes" / "cmake-log.sh").c_str(), 1);
  ::setenv("KILN_BENCH_SPAWN_LOG", spawn_log.c_str(), 1);
  const std::string recipe_file = (dir / "recipes" / "recipe.json").string();

  kiln::BuildResult built;
  try {
    kiln::Runtime runtime;
    kiln::BuildOptions one_job;  // the replayed log's commands must be the forced builds' (--parallel 1)
    one_job.jobs = 1;
    built = runtime.build(kiln::Recipe::load(recipe_file), one_job);
  } catch (const std::exception &error) {
    std::printf("kiln cmake bench: the first build failed: %s\n", error.what());
    return 1;
  }
  std::printf("kiln cmake bench: a 4-unit C++ plugin project, cmake backend, %s\n", built.entry_dir.c_str());

  // (a) unchanged ensure: a hit, timed, and the processes it spawned.
  kiln_bench::write_file(spawn_log, "");
  std::vector<double> ensure_ms;
  for (int i = 0; i < 11; ++i) {
    const auto start = Clock::now();
    kiln::Runtime runtime;
    kiln::Module module = runtime.ensure(kiln::Recipe::load(recipe_file));
    ensure_ms.push_back(seconds_since(start) * 1000);
  }
  const int spawned = count_lines(spawn_log);
  std::printf("(a) unchanged ensure (in process)      median %7.3f ms   processes spawned: %d   goal 0 spawned\n",
              median(ensure_ms), spawned);

  // (b) forced one-job builds vs the same two cmake commands run directly, alternating.
  kiln::BuildOptions force;
  force.force = true;
  force.jobs = 1;
  std::vector<double> kiln_s, direct_s, own_s;
  bool baseline_failed = false;
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    const fs::path scratch = dir / ("direct-" + std::to_string(round));
    const auto run_kiln = [&] {
      const auto start = Clock::now();
      kiln::Runtime runtime;
      const kiln::BuildResult forced = runtime.build(kiln::Recipe::load(recipe_file), force);
      kiln_s.push_back(seconds_since(start));
      double steps = 0;  // the two cmake commands, as kiln timed them
      for (const auto &unit : forced.units) steps += unit.seconds;
      own_s.push_back(kiln_s.back() - steps);
    };
    // Alternating which runs first; the replay is of the first build's log (every forced build
    // runs the same two commands, only the staging directory differs, and that is replaced).
    const bool kiln_first = round % 2 == 0;
    if (kiln_first) run_kiln();
    fs::create_directories(scratch / "gen");
    fs::copy_file(fs::path(built.entry_dir) / "gen" / "bench_values.h", scratch / "gen" / "bench_values.h");
    kiln_bench::write_file(dir / "direct.sh", replay_script(kiln_bench::read_file(fs::path(built.entry_dir) / "build.log"), built.entry_dir, scratch));
    const auto start = Clock::now();
    const int status = std::system(("sh '" + (dir / "direct.sh").string() + "'").c_str());
    direct_s.push_back(seconds_since(start));
    if (status != 0 || !fs::exists(scratch / "cmake-build" / "libkiln_bench.so")) {
      baseline_failed = true;
      std::printf("    baseline round %d FAILED (status %d); script: %s\n", round, status, (dir / "direct.sh").c_str());
    }
    if (!kiln_first) run_kiln();
  }
  std::printf("    rounds (kiln / direct, s):");
  for (int round = 0; round < kRounds; ++round) std::printf(" %.2f/%.2f", kiln_s[round], direct_s[round]);
  std::printf("   (odd rounds run the direct commands first)\n");
  const double kiln_median = median(kiln_s), direct_median = median(direct_s);
  if (baseline_failed) {
    std::printf("(b) forced build, 1 job                median %7.2f s   baseline FAILED: no ratio\n", kiln_median);
  } else {
    std::printf("(b) forced build, 1 job, %d rounds     median %7.2f s   same 2 cmake commands directly %6.2f s   "
                "overhead %+.1f %%   goal <= 3 %%\n",
                kRounds, kiln_median, direct_median, 100.0 * (kiln_median - direct_median) / direct_median);
    std::printf("    kiln's own time outside the two cmake commands (keys, staging, generator, stamp, publish): median "
                "%.3f s = %.2f %% of the direct build\n",
                median(own_s), 100.0 * median(own_s) / direct_median);
  }
  std::printf("{\"bench\":\"cmake_build\",\"ensure_ms\":%.4f,\"spawned\":%d,\"kiln_build_s\":%.3f,\"direct_build_s\":%.3f,"
              "\"kiln_own_s\":%.3f,\"baseline_failed\":%s}\n",
              median(ensure_ms), spawned, kiln_median, direct_median, median(own_s), baseline_failed ? "true" : "false");
  boost::system::error_code ignored;
  if (!baseline_failed) fs::remove_all(dir, ignored);
  return baseline_failed ? 1 : 0;
}
