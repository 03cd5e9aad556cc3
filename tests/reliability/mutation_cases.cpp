#include "reliability/mutation_cases.hpp"

#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <string>

#include <boost/filesystem/operations.hpp>
#include <doctest/doctest.h>

#include "builder/toolchain.hpp"

namespace kiln::reliability::mutation {
namespace {

std::map<std::string, std::string> baseline_marker() {
  return {{"host", "1"}, {"header", "1"}, {"define", "1"}, {"flag", "0"}, {"env", "0"}, {"cpath", "0"}};
}

// A directory for CPATH holding the header plugin.cu includes only where it is found.
fs::path cpath_dir(const Bench &bench) {
  const fs::path dir = bench.root() / "cpath";
  fs::create_directories(dir);
  test::write_text(dir / "mutation_cpath.h", "#define MUTATION_CPATH 1\n");
  return dir;
}

// The inputs of the plugin every backend building plugin.cu mutates the same way, in order.
void mutate_plugin_sources(Bench &bench) {
  edit(bench.dir() / "plugin.cu", "int32_t last_arch(const kiln_instance *) { return 0; }",
       "int32_t last_arch(const kiln_instance *) { return 1; }");
  bench.must_miss("a source byte");

  edit(bench.dir() / "inc" / "mutation.h", "#define MUTATION_HEADER 1", "#define MUTATION_HEADER 2");
  bench.marker["header"] = "2";
  bench.must_miss("a header reached only through an include directory");

  edit(bench.dir() / "plugin.cu", "\"kiln-mutation host=1", "\"kiln-mutation host=2");
  bench.marker["host"] = "2";
  bench.must_miss("host-only code (#ifndef __CUDA_ARCH__)");

  edit(bench.dir() / "plugin.cu", "out[threadIdx.x] = 1.0f;  // device-only value",
       "out[threadIdx.x] = 2.0f;  // device-only value");
  bench.must_miss("device-only code (#if __CUDA_ARCH__ >= 900)");

  edit(bench.dir() / "plugin.cu", "// Host-only: what the suite", "// Host-only (edited comment): what the suite");
  bench.must_miss("a comment (kiln keys source bytes)");
}

// What must not matter: a file no recipe field names, mtimes, the checkout's path. Last, an
// edit in the moved checkout must still miss (its files are the ones read).
void unkeyed_inputs(Bench &bench, const std::function<void(Bench &)> &edit_header) {
  test::write_text(bench.dir() / "notes.txt", "not an input\n");
  test::write_text(bench.dir() / "inc" / "unused.h", "#define NOT_INCLUDED 1\n");
  bench.must_hit("an unused file in the source and include directories");

  const std::time_t later = std::time(nullptr) + 3600;
  for (fs::recursive_directory_iterator it(bench.dir()), end; it != end; ++it) fs::last_write_time(it->path(), later);
  bench.must_hit("every file's mtime (touch)");

  bench.relocate("moved-checkout");
  bench.must_hit("the checkout moved to another path");

  edit_header(bench);
  bench.must_miss("a header edited in the moved checkout");
}

// The header edit unkeyed_inputs makes in the moved checkout of plugin.cu.
void edit_plugin_header_again(Bench &bench) {
  edit(bench.dir() / "inc" / "mutation.h", "#define MUTATION_HEADER 2", "#define MUTATION_HEADER 3");
  bench.marker["header"] = "3";
}

}  // namespace

void nvcc_mutations(const std::vector<Remote> &remotes) {
  Bench bench("nvcc", "plugin", "nvcc.json", remotes);
  bench.marker = baseline_marker();
  // The compilers through wrappers outside the checkout, so that their versions can change
  // under the same paths: nvcc (KILN_NVCC), and the host compiler both as kiln finds it
  // (KILN_HOST_CXX) and as nvcc runs it (gcc on PATH).
  const std::string real_nvcc = builder::find_nvcc();
  const fs::path real_cxx = builder::find_host_compiler();
  const fs::path tools = bench.root() / "tools";
  fs::create_directories(tools);
  const auto nvcc_wrapper = [&](const std::string &version_suffix) {
    write_script(tools / "nvcc", "if [ \"$1\" = --version ]; then '" + real_nvcc + "' --version | sed '$ s/$/" +
                                     version_suffix + "/'; exit 0; fi\nexec '" + real_nvcc + "' \"$@\"\n");
  };
  const auto host_wrapper = [&](const std::string &version_suffix) {
    write_script(tools / "host-cc", "name=$(basename \"$0\")\nif [ \"$1\" = --version ] && [ $# -eq 1 ]; then '" +
                                        real_cxx.parent_path().string() + "'/$name --version | sed '1 s/$/" +
                                        version_suffix + "/'; exit 0; fi\nexec '" + real_cxx.parent_path().string() +
                                        "'/$name \"$@\"\n");
  };
  nvcc_wrapper("");
  host_wrapper("");
  fs::create_symlink("host-cc", tools / "g++");
  fs::create_symlink("host-cc", tools / "gcc");
  bench.env()["KILN_NVCC"] = (tools / "nvcc").string();
  bench.env()["KILN_HOST_CXX"] = (tools / "g++").string();
  bench.env()["PATH"] = tools.string() + ":" + std::getenv("PATH");

  bench.baseline();
  const Built first = bench.last();
  bench.must_hit("nothing (the same recipe again)");
  CHECK(bench.last().input_key == first.input_key);

  mutate_plugin_sources(bench);

  edit(bench.dir() / "nvcc.json", "\"MUTATION_DEFINE=1\"", "\"MUTATION_DEFINE=2\"");
  bench.marker["define"] = "2";
  bench.must_miss("a define in the recipe");

  edit(bench.dir() / "nvcc.json", "\"-O2\"", "\"-O2\", \"-DMUTATION_FLAG=3\"");
  bench.marker["flag"] = "3";
  bench.must_miss("a -D in the recipe's flags");

  // The toolchain's environment: nvcc takes extra options from NVCC_APPEND_FLAGS and
  // NVCC_PREPEND_FLAGS and its host compiler from NVCC_CCBIN; the host compiler takes include
  // directories from CPATH. Each changes the artifact (its marker says so).
  const Built before_env = bench.last();
  bench.env_must_miss("NVCC_APPEND_FLAGS=-DMUTATION_ENV=7", {{"NVCC_APPEND_FLAGS", "-DMUTATION_ENV=7"}}, "env", "7",
                      before_env);

  bench.env_must_miss("NVCC_PREPEND_FLAGS=-DMUTATION_ENV=8", {{"NVCC_PREPEND_FLAGS", "-DMUTATION_ENV=8"}}, "env", "8",
                      before_env);

  write_script(tools / "ccbin-g++", "exec '" + real_cxx.string() + "' -DMUTATION_ENV=9 \"$@\"\n");
  bench.env_must_miss("NVCC_CCBIN (another host compiler for nvcc)", {{"NVCC_CCBIN", (tools / "ccbin-g++").string()}},
                      "env", "9", before_env);

  // Another host compiler named by KILN_HOST_CXX while PATH's g++ stays: kiln keys its version,
  // and nvcc must run it, not the g++ it would find itself.
  write_script(tools / "keyed-g++", "if [ \"$1\" = --version ] && [ $# -eq 1 ]; then '" + real_cxx.string() +
                                        "' --version | sed '1 s/$/ (another compiler)/'; exit 0; fi\nexec '" +
                                        real_cxx.string() + "' -DMUTATION_ENV=10 \"$@\"\n");
  bench.env_must_miss("KILN_HOST_CXX naming another host compiler than PATH's g++",
                      {{"KILN_HOST_CXX", (tools / "keyed-g++").string()}}, "env", "10", before_env);

  bench.env_must_miss("CPATH naming a directory with a header the source includes",
                      {{"CPATH", cpath_dir(bench).string()}}, "cpath", "1", before_env);

  bench.must_miss("the archs (--arch sm_80)", {}, {"--arch", "sm_80"});
  bench.back_to("the recipe's archs", before_env);

  nvcc_wrapper(" (another build)");
  bench.must_miss("the nvcc version (same path)");

  host_wrapper(" (another build)");
  bench.must_miss("the host compiler version (same path)");

  unkeyed_inputs(bench, edit_plugin_header_again);
  bench.summary();
}

void cmake_mutations(const std::vector<Remote> &remotes) {
  Bench bench("cmake", "plugin", "cmake.json", remotes);
  bench.marker = baseline_marker();
  bench.baseline();
  bench.must_hit("nothing (the same recipe again)");

  mutate_plugin_sources(bench);  // inc/ is outside project_files: the compilers' depfiles key it

  edit(bench.dir() / "cmake.json", "\"MUTATION_DEFINE\": \"1\"", "\"MUTATION_DEFINE\": \"2\"");
  bench.marker["define"] = "2";
  bench.must_miss("a define (cmake_options)");

  // The toolchain's environment, as for nvcc recipes: nvcc compiles plugin.cu (CUDA), its
  // host compiler reads CPATH.
  const Built before_env = bench.last();
  bench.env_must_miss("NVCC_APPEND_FLAGS=-DMUTATION_ENV=7", {{"NVCC_APPEND_FLAGS", "-DMUTATION_ENV=7"}}, "env", "7",
                      before_env);

  bench.env_must_miss("CPATH naming a directory with a header the source includes",
                      {{"CPATH", cpath_dir(bench).string()}}, "cpath", "1", before_env);

  bench.must_miss("the archs (--arch sm_80)", {}, {"--arch", "sm_80"});
  bench.back_to("the recipe's archs", before_env);

  unkeyed_inputs(bench, edit_plugin_header_again);
  bench.summary();
}

void nvrtc_mutations(const std::vector<Remote> &remotes) {
  Bench bench("nvrtc", "nvrtc", "nvrtc.json", remotes);  // device images: no marker to read back
  bench.baseline();
  bench.must_hit("nothing (the same recipe again)");

  const fs::path kernels = bench.dir() / "kernels.cu";
  edit(kernels, "out[threadIdx.x] = value;", "out[threadIdx.x] = value * 2.0f;");
  bench.must_miss("a source byte");
  edit(bench.dir() / "inc" / "mutation.h", "#define MUTATION_HEADER 1", "#define MUTATION_HEADER 2");
  bench.must_miss("a header named through an include directory");
  edit(bench.dir() / "nvrtc.json", "\"MUTATION_DEFINE=1\"", "\"MUTATION_DEFINE=2\"");
  bench.must_miss("a define in the recipe");
  edit(bench.dir() / "nvrtc.json", "\"-DMUTATION_FLAG=1\"", "\"-DMUTATION_FLAG=3\"");
  bench.must_miss("a -D in the recipe's flags");
  edit(kernels, "static const int kHostOnly = 1;", "static const int kHostOnly = 2;");
  bench.must_miss("host-only code (#ifndef __CUDA_ARCH__; kiln keys source bytes)");
  edit(kernels, "value += 1.0f;  // device-only value", "value += 2.0f;  // device-only value");
  bench.must_miss("device-only code (#if __CUDA_ARCH__ >= 900)");
  edit(kernels, "// Host-only: NVRTC never", "// Host-only (edited comment): NVRTC never");
  bench.must_miss("a comment (kiln keys source bytes)");

  // NVRTC runs in kiln's process and reads no directory (docs/recipes.md): an include path
  // in the environment cannot reach it.
  const Built before_env = bench.last();
  bench.must_hit("CPATH naming a directory with a header", {{"CPATH", cpath_dir(bench).string()}});

  bench.must_miss("the archs (--arch sm_80)", {}, {"--arch", "sm_80"});
  bench.back_to("the recipe's archs", before_env);

  unkeyed_inputs(bench, [](Bench &moved) {
    edit(moved.dir() / "inc" / "mutation.h", "#define MUTATION_HEADER 2", "#define MUTATION_HEADER 3");
  });
  bench.summary();
}

}  // namespace kiln::reliability::mutation
