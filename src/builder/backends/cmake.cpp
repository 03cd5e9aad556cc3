// The cmake backend of the build flow (backend.hpp): a CMake project configured and built into
// the staging directory -- `cmake -S <project> -B <staging>/cmake-build -D...`, then `cmake
// --build --target <target> --parallel <jobs>` -- whose declared output becomes the entry's
// plugin (stamped as the nvcc backend's is, plugin_artifact.hpp).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "builder/backend.hpp"
#include "builder/backends/cmake_recipe.hpp"
#include "builder/dependencies.hpp"
#include "builder/jobs.hpp"
#include "builder/backends/nvcc.hpp"
#include "builder/plugin_artifact.hpp"
#include "builder/toolchain.hpp"
#include "files/digest.hpp"
#include "files/files.hpp"
#include "files/remove_tree.hpp"
#include "support/elapsed.hpp"
#include "support/words.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

constexpr const char *kBuildDir = "cmake-build";  // scratch inside staging; never published
constexpr std::size_t kTailLines = 30;

// Where the commands point. The content key hashes the commands with placeholders instead
// ("{project}", ...), so that where the staging directory or the project lies keys nothing.
// map_staging: whether the compilers are told to map the staging directory away (a flags
// string is split at spaces by the shell, so only a plain path can go into one).
struct Paths {
  std::string project, build, abi, gen, staging;
  bool map_staging = true;
};

// A path that can stand unquoted in CMAKE_<LANG>_FLAGS and in an nvcc -Xcompiler list, and on
// the left of -ffile-prefix-map=OLD=NEW (split at its first '='): no space, quote, shell
// character, comma or '='.
bool plain_path(const std::string &path) {
  return !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::string("/._+-@%:").find(c) != std::string::npos;
  });
}

// CMAKE_<LANG>_FLAGS that make the project's outputs the same for the same inputs
// (docs/architecture.md §3): the staging directory mapped away wherever the compilers record a
// path (debug info, __FILE__ of generated headers), and nvcc's intermediate files beside each
// object instead of pid-named in /tmp (the host object names the file it compiled).
std::map<std::string, std::string> reproducible_flags(const Paths &paths) {
  const std::string map = "-ffile-prefix-map=" + paths.staging + "=.";
  if (!paths.map_staging) return {{"CMAKE_CUDA_FLAGS", "-objtemp"}};
  return {{"CMAKE_C_FLAGS", map}, {"CMAKE_CXX_FLAGS", map}, {"CMAKE_CUDA_FLAGS", "-objtemp -Xcompiler=" + map}};
}

// The last `lines` lines of a log.
std::string tail_of(const std::string &text, std::size_t lines) {
  std::size_t at = text.size();
  if (at > 0 && text[at - 1] == '\n') --at;
  for (std::size_t seen = 0; at > 0; --at) {
    if (text[at - 1] == '\n' && ++seen == lines) break;
  }
  return text.substr(at);
}

// Up to 5 shared objects in the build directory: what "output" might have meant.
std::string shared_objects_under(const fs::path &dir) {
  std::string found;
  int count = 0;
  boost::system::error_code error;
  for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end && count < 5; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.find(".so") == std::string::npos || !fs::is_regular_file(it->path(), error)) continue;
    found += (found.empty() ? "" : ", ") + it->path().lexically_relative(dir).string();
    ++count;
  }
  return found.empty() ? "none" : found;
}

// The make program CMake configured (CMakeCache.txt's CMAKE_MAKE_PROGRAM): ninja keeps the
// compilers' depfiles in .ninja_deps, where only it can read them back.
std::string make_program_of(const fs::path &build_dir) {
  try {
    const std::string cache = files::read_file(build_dir / "CMakeCache.txt", files::FileOrigin::input);
    const std::string key = "\nCMAKE_MAKE_PROGRAM:FILEPATH=";
    const auto at = cache.find(key);
    if (at == std::string::npos) return "";
    const auto end = cache.find('\n', at + key.size());
    return cache.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
  } catch (const Error &) {
    return "";
  }
}

// Every file the project's compiles read, from the compilers' depfiles: the Makefile
// generator leaves them beside the objects (<object>.d); ninja folds them into .ninja_deps,
// which `ninja -t deps` prints (the target's line, then each dependency indented).
std::vector<std::string> project_depfile_paths(const fs::path &build_dir, const fs::path &log) {
  std::vector<std::string> paths;
  boost::system::error_code error;
  for (fs::recursive_directory_iterator it(build_dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() != ".d" || !fs::is_regular_file(it->path())) continue;
    for (auto &path : parse_depfile(files::read_file(it->path(), files::FileOrigin::input))) paths.push_back(std::move(path));
  }
  if (!paths.empty() || !fs::exists(build_dir / ".ninja_deps")) return paths;
  const std::string ninja = make_program_of(build_dir);
  if (ninja.empty()) return paths;
  ProcessSpec spec;
  spec.argv = {ninja, "-C", build_dir.string(), "-t", "deps"};
  spec.timeout_seconds = 60;
  const ProcessResult run = run_process(spec);
  if (!run.ok()) {
    append_log(log, "`ninja -t deps` failed (" + how_it_ended(run) + "): only the project's declared files key it\n");
    return paths;
  }
  std::size_t start = 0;
  while (start < run.output.size()) {
    std::size_t end = run.output.find('\n', start);
    if (end == std::string::npos) end = run.output.size();
    const std::string line = run.output.substr(start, end - start);
    if (line.rfind("    ", 0) == 0) paths.push_back(line.substr(4));
    start = end + 1;
  }
  return paths;
}

class CmakeBackend final : public Backend {
 public:
  explicit CmakeBackend(const BuilderContext &context) : context_(context) {}

  BuildIdentity identity(const Recipe &recipe, const std::vector<Arch> &archs, bool remember) override {
    const fs::path cache = remember ? context_.toolchain_cache : fs::path();  // empty: remember nothing
    cmake_ = identify_cmake(cache);  // first: no cmake is "no toolchain", whatever else is there
    toolchain_ = identify_toolchain(cache);
    toolchain_.environment = toolchain_environment(recipe.backend);
    return cmake_build_identity(recipe, archs, toolchain_, cmake_, context_.abi_dir, tool_digest_memo(context_, remember));
  }

  std::string toolchain_text() const override {
    return "cmake " + cmake_.path + " (" + cmake_.version + ")\nnvcc " + toolchain_.nvcc_path + " (" +
           toolchain_.nvcc_version + ")\nhost compiler " + toolchain_.host_cxx_path + " (" +
           toolchain_.host_cxx_version + ")\n";
  }

  void plan(const Recipe &recipe, const BuildOptions &options, const BuildIdentity & /*identity*/,
            BuildPlan &plan) const override {
    plan.cmake = cmake_.path;
    plan.cmake_version = cmake_.version;
    plan.nvcc = toolchain_.nvcc_path;
    plan.nvcc_version = toolchain_.nvcc_version;
    plan.host_compiler = toolchain_.host_cxx_version;
    const Paths paths{recipe.project, "<staging>/" + std::string(kBuildDir), context_.abi_dir, "<staging>/gen", "<staging>"};
    plan.steps.push_back("configure: " + support::shell_words(configure_command(recipe, plan.archs, paths)));
    plan.steps.push_back("build: " + support::shell_words(build_command(recipe, paths)) + " --parallel " +
                         std::to_string(jobs_for(recipe, options)));
    plan.steps.push_back("stamp " + recipe.output + " as " + recipe.artifact);
  }

  // What the compilers will see that kiln knows beforehand (the base key), plus the digests of
  // the headers the last build of that base key read (dependencies.hpp): headers outside
  // project_files key it too. With no record yet, compile() settles the key after the build.
  std::optional<std::string> content_key(const StagedBuild &build) override {
    const Recipe &recipe = build.recipe;
    const Paths abstract{"{project}", "{build}", "{abi}", "{gen}", "{staging}", plain_path(build.staging.string())};
    files::Hasher content;
    content.add_field("key", "content")
        .add_field("key_schema", std::to_string(kKeySchema))
        .add_field("backend", "cmake")
        .add_field("toolchain", toolchain_.digest())
        .add_field("cmake_path", cmake_.path)
        .add_field("cmake_version", cmake_.version)
        .add_field("abi", build.identity.abi_headers);
    for (const auto &file : expand_project_files(recipe)) content.add_field("project/" + file.name, input_file_digest(file.path));
    for (const auto &file : build.generated) content.add_field("generated/" + fs::path(file).filename().string(), input_file_digest(file));
    content.add_list("configure", configure_command(recipe, build.archs, abstract))
        .add_list("build", build_command(recipe, abstract))
        .add_field("output", recipe.output)
        .add_field("artifact", recipe.artifact);
    base_key_ = content.hex();
    dependencies_.clear();
    const auto recorded = read_dependency_record(dependency_record(build));
    if (!recorded) return std::nullopt;
    dependencies_ = dependency_digests(*recorded, recipe.base_dir);
    return key_with_dependencies("cmake", base_key_, dependencies_);
  }

  Produced compile(const StagedBuild &build, const std::string &known_key, const SettleContentKey &settle) override {
    const Recipe &recipe = build.recipe;
    const fs::path build_dir = build.staging / kBuildDir;
    const Paths paths{recipe.project, build_dir.string(), context_.abi_dir, build.gen.string(), build.staging.string(),
                      plain_path(build.staging.string())};
    const unsigned jobs = jobs_for(recipe, build.options);
    if (!paths.map_staging) {
      append_log(build.build_log, "the staging directory " + build.staging.string() + " cannot stand unquoted in compiler "
                                  "flags: outputs that record a path (debug info, __FILE__) differ from build to build\n");
    }
    append_log(build.build_log, "cmake build with at most " + std::to_string(jobs) + " job(s) at once (" +
                                    std::to_string(recipe.unit_memory_mb) + " MiB each)\n");
    Produced produced;
    if (build.options.progress) {  // the two steps are its units
      build.options.progress({BuildEvent::Kind::units_queued, recipe.consumer + "/" + recipe.name, 0, false, 2});
    }
    produced.units.push_back(run_step(build, "cmake configure", configure_command(recipe, build.archs, paths)));
    std::vector<std::string> build_argv = build_command(recipe, paths);
    build_argv.insert(build_argv.end(), {"--parallel", std::to_string(jobs)});
    produced.units.push_back(run_step(build, "cmake --build --target " + recipe.target, build_argv));

    const fs::path output = build_dir / recipe.output;
    boost::system::error_code error;
    if (!fs::is_regular_file(output, error)) {
      const std::string why = "recipe " + recipe.file + ": target " + recipe.target + " built, but \"output\" " +
                              recipe.output + " is not in the CMake build directory (shared objects there: " +
                              shared_objects_under(build_dir) + "); set \"output\" to the file the target writes, " +
                              "relative to the build directory. Nothing was published.";
      append_log(build.build_log, why + "\n");
      throw BuildError(why, why);
    }

    // The headers the compiles read: the content key's last part, recorded for the next build.
    // (CMake's own generated files are in the build directory, inside staging: not recorded.)
    const std::vector<std::string> recorded = recorded_dependencies(
        project_depfile_paths(build_dir, build.build_log), "",
        dependency_roots(recipe.base_dir, context_.abi_dir, build.staging, toolchain_.nvcc_path, build_dir.string()));
    dependencies_ = dependency_digests(recorded, recipe.base_dir);
    const std::string content_key = key_with_dependencies("cmake", base_key_, dependencies_);
    files::create_directories(build.layout.objects());
    write_dependency_record(dependency_record(build), recorded);
    if (content_key != known_key && !settle(content_key)) {
      files::remove_tree(build_dir);
      Produced existing;
      existing.settled_on_existing = true;
      return existing;
    }

    const fs::path artifact = build.staging / recipe.artifact;
    fs::rename(output, artifact);
    const FinishedPlugin plugin = finish_plugin_artifact(artifact, content_key, recipe, build.build_log);
    files::remove_tree(build_dir);  // scratch: only the entry's files travel

    describe_plugin(produced, recipe, plugin, toolkit_version_from(toolchain_.nvcc_version));
    for (const auto &[path, digest] : dependencies_) produced.provenance[dependency_field(path)] = digest;
    return produced;
  }

 private:
  fs::path dependency_record(const StagedBuild &build) const {
    return build.layout.objects() / ("cmake-" + base_key_ + ".deps");
  }

  // cmake -S -B with kiln's own cache options, then the recipe's ({gen}, {abi} expanded). One
  // argv element per option: no shell ever sees a value, so ';' (a CMake list) stays one value.
  std::vector<std::string> configure_command(const Recipe &recipe, const std::vector<Arch> &archs, const Paths &paths) const {
    std::vector<std::string> argv = {cmake_.path,
                                     "-S",
                                     paths.project,
                                     "-B",
                                     paths.build,
                                     "--no-warn-unused-cli",  // a C++-only project ignores the CUDA options
                                     "-DCMAKE_BUILD_TYPE=Release",
                                     "-DCMAKE_CUDA_COMPILER=" + toolchain_.nvcc_path,
                                     "-DCMAKE_CXX_COMPILER=" + toolchain_.host_cxx_path,
                                     "-DCMAKE_CUDA_HOST_COMPILER=" + toolchain_.host_cxx_path,
                                     "-DCMAKE_CUDA_ARCHITECTURES=" + cuda_architectures(archs),
                                     "-DKILN_ABI_DIR=" + paths.abi,
                                     "-DKILN_GEN_DIR=" + paths.gen};
    // kiln's flags first, then the recipe's own value of the same variable (appended: later
    // flags win where they conflict).
    std::map<std::string, std::string> flags = reproducible_flags(paths);
    for (const auto &[name, value] : recipe.cmake_options) {
      const std::string expanded = substitute({value}, {{"{gen}", paths.gen}, {"{abi}", paths.abi}}).front();
      const auto ours = flags.find(name);
      if (ours != flags.end()) {
        ours->second += " " + expanded;
      } else {
        argv.push_back("-D" + name + "=" + expanded);
      }
    }
    for (const auto &[name, value] : flags) argv.push_back("-D" + name + "=" + value);
    return argv;
  }

  std::vector<std::string> build_command(const Recipe &recipe, const Paths &paths) const {
    return {cmake_.path, "--build", paths.build, "--config", "Release", "--target", recipe.target};
  }

  // As the nvcc backend's units: bounded by cores (or --jobs / KILN_JOBS) and by memory.
  static unsigned jobs_for(const Recipe &recipe, const BuildOptions &options) {
    const unsigned requested = options.jobs != 0 ? options.jobs : default_jobs();
    return bounded_jobs(requested, recipe.unit_memory_mb * 1024 * 1024, available_memory_bytes());
  }

  UnitReport run_step(const StagedBuild &build, const std::string &step, const std::vector<std::string> &argv) const {
    const Recipe &recipe = build.recipe;
    if (build.options.progress) build.options.progress({BuildEvent::Kind::unit_started, step, 0, false});
    ProcessSpec spec;
    spec.argv = argv;
    spec.log_file = build.build_log.string();
    spec.cancel = &build.cancel;
    // The bound is ours: a jobserver or -j inherited from a make running kiln would override it.
    spec.env_overrides = {{"MAKEFLAGS", ""}, {"MFLAGS", ""}};
    append_log(build.build_log, "\n$ " + support::shell_words(argv) + "\n");
    const ProcessResult run = run_process(spec);
    if (run.cancelled) {
      throw Error(ErrorKind::other, "build of " + recipe.consumer + "/" + recipe.name + " cancelled; nothing was published");
    }
    if (!run.ok()) {
      throw BuildError("recipe " + recipe.file + ": " + step + " of " + recipe.consumer + "/" + recipe.name +
                           " failed (" + how_it_ended(run) + "); nothing was published. The last lines of its log:\n" +
                           tail_of(run.output, kTailLines),
                       run.output);
    }
    append_log(build.build_log, step + ": done in " + std::to_string(run.seconds) + " s\n");
    if (build.options.progress) build.options.progress({BuildEvent::Kind::unit_finished, step, run.seconds, false});
    return {step, false, run.seconds};
  }

  const BuilderContext &context_;
  CmakeIdentity cmake_;
  ToolchainIdentity toolchain_;
  std::string base_key_;                              // content_key()'s, without the dependencies
  std::map<std::string, std::string> dependencies_;  // recorded path -> digest
};

}  // namespace

std::unique_ptr<Backend> make_cmake_backend(const BuilderContext &context) {
  return std::make_unique<CmakeBackend>(context);
}

}  // namespace kiln::builder
