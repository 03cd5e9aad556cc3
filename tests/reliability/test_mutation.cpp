// The mutation suite: no wrong cache hit. For each backend (nvcc, cmake, nvrtc) a recipe is
// built once, then each input that must change the result is mutated in turn -- a source byte,
// a header reached only through an include directory, a define, host-only code (#ifndef
// __CUDA_ARCH__), device-only code (#if __CUDA_ARCH__ >= 900), an environment variable the
// toolchain reads, the archs, the toolkit's and host compiler's versions -- and the next
// `kiln build --json` must compile ("built", never "hit" or "reused") into another content key;
// for plugins the artifact must also carry the marker of the inputs it was built from
// (mutation/plugin/plugin.cu). Inputs kiln's design says key nothing -- a file no recipe field
// names, a file's mtime, the checkout's path (recipe paths are relative to the recipe,
// docs/recipes.md) -- must hit. A comment edit is a miss: kiln keys source bytes, not tokens
// (docs/recipes.md "Keys"). Each backend prints its tally: mutations, misses, hits, wrong hits
// (a hit where a miss was required).
#include <doctest/doctest.h>

#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "builder/toolchain.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using kiln::test::read_text;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;

namespace {

const fs::path kFixtures = fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "reliability" / "mutation";

using Env = std::map<std::string, std::string>;

struct Built {
  bool ok = false;
  std::string outcome, input_key, content_key, artifact;
};

// Replaces `from` by `to` in `file` (once; it must be there).
void edit(const fs::path &file, const std::string &from, const std::string &to) {
  std::string text = read_text(file);
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, file.string() << " has no \"" << from << "\"");
  text.replace(at, from.size(), to);
  write_text(file, text);
}

void write_script(const fs::path &file, const std::string &body) {
  write_text(file, "#!/bin/sh\n" + body);
  fs::permissions(file, fs::owner_all | fs::group_read | fs::group_exe | fs::others_read | fs::others_exe);
}

// The "kiln-mutation ...;" marker a plugin carries (mutation/plugin/plugin.cu), or "" when absent.
std::string marker_of(const fs::path &artifact) {
  const std::string bytes = read_text(artifact);
  const auto at = bytes.find("kiln-mutation ");
  if (at == std::string::npos) return "";
  const auto end = bytes.find(';', at);
  return end == std::string::npos ? "" : bytes.substr(at, end - at);
}

// One backend's workspace: a copy of a fixture directory and a cache beside it, every build a
// `kiln build --json` of one recipe, every outcome tallied.
class Bench {
 public:
  Bench(std::string backend, const std::string &fixture, const std::string &recipe_name)
      : backend_(std::move(backend)), recipe_name_(recipe_name) {
    dir_ = tmp_.path() / "checkout";
    kiln::test::copy_tree(kFixtures / fixture, dir_);
    env_ = kiln::test::cli_env(tmp_.path() / "cache");
    env_["KILN_JOBS"] = "2";
  }

  fs::path dir() const { return dir_; }
  fs::path root() const { return tmp_.path(); }
  Env &env() { return env_; }
  // The marker the next plugin build must carry; empty: not checked (device images).
  std::map<std::string, std::string> marker;

  Built build(const Env &extra = {}, const std::vector<std::string> &args = {}) {
    std::vector<std::string> argv = {"build", "--json", (dir_ / recipe_name_).string()};
    argv.insert(argv.end(), args.begin(), args.end());
    Env env = env_;
    for (const auto &[name, value] : extra) env[name] = value;
    const auto result = kiln::test::run_kiln(argv, env);
    Built built;
    if (result.exit_code != 0) {
      FAIL_CHECK(backend_ << ": kiln build exited " << result.exit_code << ": " << result.err);
      return built;
    }
    const auto out = nlohmann::json::parse(result.out);
    built.ok = true;
    built.outcome = out["outcome"];
    built.input_key = out["input_key"];
    built.content_key = out["content_key"];
    if (out.contains("entry") && !marker.empty()) {
      for (fs::directory_iterator it(out["entry"].get<std::string>()), end; it != end; ++it) {
        if (it->path().extension() == ".so") built.artifact = it->path().string();
      }
    }
    return built;
  }

  // The first build of the recipe, and the state every mutation is compared with.
  void baseline(const Env &extra = {}) {
    last_ = build(extra);
    REQUIRE(last_.ok);
    CHECK(last_.outcome == "built");
    check_marker("baseline", last_);
  }

  // After mutating an input that must change the result: a compile into another content key.
  void must_miss(const std::string &what, const Env &extra = {}, const std::vector<std::string> &args = {}) {
    ++mutations_;
    const Built now = build(extra, args);
    if (!now.ok) return;
    const bool miss = now.outcome == "built";
    (miss ? misses_ : hits_) += 1;
    if (!miss) ++wrong_hits_;
    CHECK_MESSAGE(miss, backend_ << ": " << what << ": outcome " << now.outcome
                                 << " where a rebuild was required (a wrong hit: kiln does not key this input)");
    CHECK_MESSAGE(now.content_key != last_.content_key,
                  backend_ << ": " << what << ": the content key stayed " << now.content_key);
    check_marker(what, now);
    last_ = now;
  }

  // After changing what must not matter: a hit on the entry built before.
  void must_hit(const std::string &what, const Env &extra = {}, const std::vector<std::string> &args = {}) {
    ++mutations_;
    const Built now = build(extra, args);
    if (!now.ok) return;
    (now.outcome == "hit" ? hits_ : misses_) += 1;
    CHECK_MESSAGE(now.outcome == "hit",
                  backend_ << ": " << what << ": outcome " << now.outcome << " where a hit was due");
    CHECK_MESSAGE(now.content_key == last_.content_key, backend_ << ": " << what << ": another content key");
    check_marker(what, now);
    last_ = now;
  }

  // Back to a state built before (an environment variable unset, the recipe's archs again): a
  // hit on that state's entry. Not a mutation.
  void back_to(const std::string &what, const Built &state, const Env &extra = {}) {
    const Built now = build(extra);
    if (!now.ok) return;
    CHECK_MESSAGE(now.outcome == "hit", backend_ << ": back to " << what << ": outcome " << now.outcome);
    CHECK_MESSAGE(now.content_key == state.content_key, backend_ << ": back to " << what << ": another content key");
    last_ = now;
  }

  // An environment variable set for one build: a miss whose artifact carries marker `field` =
  // `value`; unset again, a hit on `before`.
  void env_must_miss(const std::string &what, const Env &set, const std::string &field, const std::string &value,
                     const Built &before) {
    const std::string previous = marker.empty() ? "" : marker.at(field);
    if (!marker.empty()) marker[field] = value;
    must_miss(what, set);
    if (!marker.empty()) marker[field] = previous;
    back_to("without " + what, before);
  }

  const Built &last() const { return last_; }

  // Moves the checkout elsewhere (the cache stays); the recipe's paths are relative to it.
  void relocate(const std::string &name) {
    const fs::path moved = tmp_.path() / name;
    fs::rename(dir_, moved);
    dir_ = moved;
  }

  void summary() const {
    MESSAGE("mutation " << backend_ << ": " << mutations_ << " mutations, " << misses_ << " misses, " << hits_
                        << " hits, " << wrong_hits_ << " wrong hits");
  }

 private:
  void check_marker(const std::string &what, const Built &built) const {
    if (marker.empty() || !built.ok) return;
    std::string expected = "kiln-mutation";
    for (const auto &field : {"host", "header", "define", "flag", "env", "cpath"})
      expected += std::string(" ") + field + "=" + marker.at(field);
    CHECK_MESSAGE(marker_of(built.artifact) == expected,
                  backend_ << ": " << what << ": the artifact kiln returned was built from other inputs");
  }

  std::string backend_, recipe_name_;
  TempDir tmp_;
  fs::path dir_;
  Env env_;
  Built last_;
  int mutations_ = 0, misses_ = 0, hits_ = 0, wrong_hits_ = 0;
};

std::map<std::string, std::string> baseline_marker() {
  return {{"host", "1"}, {"header", "1"}, {"define", "1"}, {"flag", "0"}, {"env", "0"}, {"cpath", "0"}};
}

// A directory for CPATH holding the header plugin.cu includes only where it is found.
fs::path cpath_dir(const Bench &bench) {
  const fs::path dir = bench.root() / "cpath";
  fs::create_directories(dir);
  write_text(dir / "mutation_cpath.h", "#define MUTATION_CPATH 1\n");
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
  write_text(bench.dir() / "notes.txt", "not an input\n");
  write_text(bench.dir() / "inc" / "unused.h", "#define NOT_INCLUDED 1\n");
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

TEST_SUITE("mutation") {
  TEST_CASE("mutation: nvcc backend: every keyed input misses, nothing else does" *
            kiln::test::skip_if(kiln::test::no_toolchain)) {
    Bench bench("nvcc", "plugin", "nvcc.json");
    bench.marker = baseline_marker();
    // The compilers through wrappers outside the checkout, so that their versions can change
    // under the same paths: nvcc (KILN_NVCC), and the host compiler both as kiln finds it
    // (KILN_HOST_CXX) and as nvcc runs it (gcc on PATH).
    const std::string real_nvcc = kiln::builder::find_nvcc();
    const fs::path real_cxx = kiln::builder::find_host_compiler();
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

  TEST_CASE("mutation: cmake backend: every keyed input misses, nothing else does" *
            kiln::test::skip_if(kiln::test::no_cmake_toolchain)) {
    Bench bench("cmake", "plugin", "cmake.json");
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

  TEST_CASE("mutation: nvrtc backend: every keyed input misses, nothing else does" *
            kiln::test::skip_if(kiln::test::no_nvrtc)) {
    Bench bench("nvrtc", "nvrtc", "nvrtc.json");  // device images: no marker to read back
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
}
