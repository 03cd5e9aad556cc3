#include "support/words.hpp"
#include "support/elapsed.hpp"
#include "builder/nvcc_backend.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "builder/backend.hpp"
#include "builder/jobs.hpp"
#include "builder/toolchain.hpp"
#include "builder/plugin_artifact.hpp"
#include "store/digest.hpp"
#include "store/files.hpp"

namespace kiln::builder {

std::string arch_digits(const Arch &arch) {
  return std::to_string(arch.cc()) + (arch.suffix != '\0' ? std::string(1, arch.suffix) : std::string());
}

std::string abstract_path(const std::string &path, const std::string &recipe_dir) {
  if (path == recipe_dir) return "$RECIPE";
  if (path.compare(0, recipe_dir.size() + 1, recipe_dir + "/") == 0) return "$RECIPE/" + path.substr(recipe_dir.size() + 1);
  return path;
}

std::vector<std::string> gencode_flags(const std::vector<Arch> &archs) {
  std::vector<std::string> flags;
  for (const auto &arch : archs) {
    const std::string digits = arch_digits(arch);
    const std::string code = arch.kind == Arch::Kind::ptx ? "compute_" + digits : "sm_" + digits;
    flags.push_back("-gencode=arch=compute_" + digits + ",code=" + code);
  }
  return flags;
}

std::vector<std::string> compile_command(const Recipe &recipe, const std::vector<Arch> &archs,
                                         const std::string &unit) {
  std::vector<std::string> command = {
      "-c", abstract_path(unit, recipe.base_dir), "-o", "$OUT", "-std=c++17",
      // Plugins export only kiln_plugin_negotiate and must unload cleanly (abi/README.md).
      "-Xcompiler=-fPIC,-fvisibility=hidden,-fvisibility-inlines-hidden,-fno-gnu-unique", "-I$ABI", "-I$GEN"};
  for (const auto &dir : recipe.include_dirs) command.push_back("-I" + abstract_path(dir, recipe.base_dir));
  for (const auto &define : recipe.defines) command.push_back("-D" + define);
  for (const auto &flag : gencode_flags(archs)) command.push_back(flag);
  for (const auto &flag : recipe.flags) command.push_back(flag);
  return command;
}

std::vector<std::string> link_command(const Recipe &recipe, const std::vector<Arch> &archs,
                                      const std::vector<std::string> &objects) {
  std::vector<std::string> command = {"--shared", "-o", "$OUT"};
  for (const auto &object : objects) command.push_back(object);
  for (const auto &flag : gencode_flags(archs)) command.push_back(flag);
  // Static cudart unless the recipe picks its own: "-cudart=none" links a host-only plugin that
  // takes every driver call from its host (kiln.host.kernels/1), such as the IK split form's host part.
  const bool own_cudart = std::any_of(recipe.link_flags.begin(), recipe.link_flags.end(), [](const std::string &flag) {
    return flag.rfind("-cudart=", 0) == 0 || flag.rfind("--cudart=", 0) == 0;
  });
  if (!own_cudart) command.push_back("-cudart=static");
  command.push_back("-Xlinker=--no-undefined,--exclude-libs,ALL");
  for (const auto &flag : recipe.link_flags) command.push_back(flag);
  return command;
}

std::vector<std::string> substitute(std::vector<std::string> command, const Placeholders &values) {
  for (auto &arg : command) {
    for (const auto &[name, value] : values) {
      for (std::size_t at = arg.find(name); at != std::string::npos; at = arg.find(name, at + value.size())) {
        arg.replace(at, name.size(), value);
      }
    }
  }
  return command;
}

}  // namespace kiln::builder

// ---------------------------------------------------------------------------------------------
// The nvcc backend of the build flow (backend.hpp): one `nvcc -c` per unit, in parallel and
// served from objects/ when seen before, then `nvcc --shared`, then the build stamp
// (plugin_artifact.hpp).
namespace kiln::builder {
namespace {

using support::join_words;
using support::seconds_since;

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

// objects/<unit>-<key>.o has its digest beside it, written after it: an object is reused only
// when its bytes have that digest. A torn or altered object (or one whose digest never got
// written) is compiled again, never linked in. Two builds caching one unit at once may leave one's
// digest beside the other's object (nvcc output is not byte-reproducible): that costs a compile.
fs::path digest_beside(const fs::path &object) { return object.string() + ".digest"; }

// Whether the cached object may be linked: it exists and its bytes have the digest recorded
// beside it. When it exists but may not be linked, *why says why (a plain miss is not worth a word).
bool cached_object_usable(const fs::path &object, std::string *why) {
  boost::system::error_code error;
  if (!fs::exists(object, error)) return false;
  try {
    std::string recorded = store::read_file(digest_beside(object), store::FileOrigin::store, 4096);
    while (!recorded.empty() && (recorded.back() == '\n' || recorded.back() == ' ')) recorded.pop_back();
    const std::string actual = input_file_digest(object.string());  // streamed: a shrinking file is no SIGBUS
    if (actual == recorded) return true;
    *why = "does not match its recorded digest (recorded " + recorded.substr(0, 40) + ", file " + actual +
           "): it is torn or was altered";
  } catch (const NotFoundError &) {
    *why = "has no recorded digest (its writer died before recording it)";
  } catch (const Error &failure) {
    *why = std::string("cannot be checked: ") + failure.what();
  }
  return false;
}

// A compiler that reports success but wrote nothing is a failed build step, not a missing file.
void require_output(const std::string &what, const fs::path &output, const ProcessResult &result) {
  if (fs::is_regular_file(output)) return;
  throw BuildError(what + " exited 0 but wrote no " + output.filename().string() +
                       "; nothing was published. Check the compiler (KILN_NVCC) and its output:\n" + result.output,
                   result.output);
}

struct Unit {
  std::string source;
  std::string stem;
  std::vector<std::string> command;  // abstract
  std::string key;
  fs::path cached_object;
  fs::path object;                   // what the link uses
  UnitReport report;
};

class NvccBackend final : public Backend {
 public:
  explicit NvccBackend(const BuilderContext &context) : context_(context) {}

  BuildIdentity identity(const Recipe &recipe, const std::vector<Arch> &archs, bool remember) override {
    toolchain_ = identify_toolchain(remember ? context_.toolchain_cache : fs::path());  // empty: remember nothing
    return build_identity(recipe, archs, toolchain_, context_.abi_dir);
  }

  std::string toolchain_text() const override {
    return "nvcc " + toolchain_.nvcc_path + " (" + toolchain_.nvcc_version + ")\nhost compiler " +
           toolchain_.host_cxx_version + "\n";
  }

  void plan(const Recipe &recipe, const BuildOptions &options, BuildPlan &plan) const override {
    plan.nvcc = toolchain_.nvcc_path;
    plan.nvcc_version = toolchain_.nvcc_version;
    plan.host_compiler = toolchain_.host_cxx_version;
    for (const auto &source : recipe.sources) {
      plan.steps.push_back("compile " + fs::path(source).filename().string() +
                           (options.force ? " (forced)"
                                          : recipe.generators.empty() ? "" : " (object cache checked after generators run)"));
    }
    std::string archs;
    for (const auto &arch : plan.archs) archs += (archs.empty() ? "" : ",") + arch.to_string();
    plan.steps.push_back("link " + recipe.artifact + " for " + archs);
  }

  std::string content_key(const StagedBuild &build) override {
    const Recipe &recipe = build.recipe;
    const std::vector<std::string> headers = expand_headers(recipe);
    store::Hasher seen;  // every header-like input, as one set: an edit rebuilds every unit
    for (const auto &file : build.generated) seen.add_field("generated/" + fs::path(file).filename().string(), input_file_digest(file));
    for (const auto &file : headers) seen.add_field(abstract_path(file, recipe.base_dir), input_file_digest(file));
    seen.add_field("abi", build.identity.abi_headers);
    const std::string headers_digest = seen.hex();

    units_.clear();
    for (const auto &source : recipe.sources) {
      Unit unit;
      unit.source = source;
      unit.stem = fs::path(source).stem().string();
      unit.command = compile_command(recipe, build.archs, source);
      store::Hasher key;
      key.add_field("key", "unit")
          .add_field("toolchain", toolchain_.digest())
          .add_field("headers", headers_digest)
          .add_field("source", abstract_path(source, recipe.base_dir))
          .add_field("bytes", input_file_digest(source))
          .add_list("command", unit.command);
      unit.key = key.hex();
      unit.cached_object = build.layout.objects() / (unit.stem + "-" + unit.key + ".o");
      unit.report.name = fs::path(source).filename().string();
      units_.push_back(std::move(unit));
    }
    std::vector<std::string> abstract_objects;
    for (const auto &unit : units_) abstract_objects.push_back("$OBJ/" + unit.stem + "-" + unit.key + ".o");
    const std::vector<std::string> link = link_command(recipe, build.archs, abstract_objects);
    store::Hasher content;
    content.add_field("key", "content")
        .add_field("key_schema", std::to_string(kKeySchema))
        .add_field("toolchain", toolchain_.digest())
        .add_field("headers", headers_digest)
        .add_field("artifact", recipe.artifact)
        .add_list("link", link);
    for (const auto &unit : units_) content.add_field("unit", unit.key);
    return content.hex();
  }

  Produced compile(const StagedBuild &build, const std::string &content_key) override {
    const Recipe &recipe = build.recipe;
    const BuildOptions &options = build.options;
    const fs::path &staging = build.staging;
    const fs::path objects = staging / "obj";
    store::create_directories(objects);
    CancelToken &cancel = build.cancel;
    const auto check_cancel = [&] {
      if (cancel.cancelled()) throw Error(ErrorKind::other, "build of " + recipe.consumer + "/" + recipe.name + " cancelled; nothing was published");
    };

    // Units, in parallel, bounded by cores and by memory; each from the object cache when seen.
    store::create_directories(build.layout.objects());
    const Placeholders paths = {{"$GEN", build.gen.string()}, {"$RECIPE", recipe.base_dir}, {"$ABI", context_.abi_dir}};
    const unsigned requested = options.jobs != 0 ? options.jobs : default_jobs();
    const unsigned jobs = bounded_jobs(requested, recipe.unit_memory_mb * 1024 * 1024, available_memory_bytes());
    append_log(build.build_log, std::to_string(units_.size()) + " unit(s), " + std::to_string(jobs) + " job(s) at once\n");
    std::mutex log_mutex;
    run_parallel(units_.size(), jobs, [&](std::size_t index) {
      Unit &unit = units_[index];
      if (options.progress) options.progress({BuildEvent::Kind::unit_started, unit.report.name, 0, false});
      const auto unit_start = Clock::now();
      std::string unusable;
      const bool reuse = !options.force && cached_object_usable(unit.cached_object, &unusable);
      if (!unusable.empty()) {
        const std::string message = "object cache: " + unit.cached_object.string() + " " + unusable + "; compiling " +
                                    unit.report.name + " again";
        std::lock_guard<std::mutex> guard_log(log_mutex);
        append_log(build.build_log, message + "\n");
        if (context_.log) context_.log(LogLevel::warning, message);
      }
      if (reuse) {
        unit.object = unit.cached_object;
        unit.report.cached = true;
      } else {
        unit.object = objects / (unit.stem + ".o");
        const fs::path unit_log = staging / (unit.stem + ".log");
        ProcessSpec spec;
        spec.argv = substitute(unit.command, paths);
        spec.argv = substitute(spec.argv, {{"$OUT", unit.object.string()}});
        spec.argv.insert(spec.argv.begin(), toolchain_.nvcc_path);
        spec.log_file = unit_log.string();
        spec.cancel = &cancel;
        const ProcessResult run = run_process(spec);
        {
          std::lock_guard<std::mutex> guard_log(log_mutex);
          append_log(build.build_log, "\n$ " + join_words(spec.argv) + "\n" + run.output);
        }
        if (run.cancelled) return;
        if (!run.ok()) fail_step("compiling " + unit.report.name, run);
        require_output("compiling " + unit.report.name, unit.object, run);
        // Into the object cache atomically and durably: a torn object must never be linked.
        const fs::path temp = build.layout.objects() / ("." + unit.stem + ".tmp-" + store::unique_suffix());
        store::copy_file_synced(unit.object, temp);
        const std::string digest = input_file_digest(temp.string());
        fs::rename(temp, unit.cached_object);
        store::write_file_atomic(digest_beside(unit.cached_object), digest + "\n");
      }
      unit.report.seconds = seconds_since(unit_start);
      {
        std::lock_guard<std::mutex> guard_log(log_mutex);
        append_log(build.build_log, "unit " + unit.report.name + ": " + (unit.report.cached ? "cached" : "compiled") +
                                        " in " + std::to_string(unit.report.seconds) + " s\n");
      }
      if (options.progress) {
        options.progress({BuildEvent::Kind::unit_finished, unit.report.name, unit.report.seconds, unit.report.cached});
      }
    }, cancel);
    check_cancel();

    // Link.
    if (options.progress) options.progress({BuildEvent::Kind::link_started, recipe.artifact, 0, false});
    const fs::path artifact = staging / recipe.artifact;
    std::vector<std::string> link_objects;
    for (const auto &unit : units_) link_objects.push_back(unit.object.string());
    ProcessSpec spec;
    spec.argv = link_command(recipe, build.archs, link_objects);
    spec.argv = substitute(spec.argv, paths);
    spec.argv = substitute(spec.argv, {{"$OUT", artifact.string()}});
    spec.argv.insert(spec.argv.begin(), toolchain_.nvcc_path);
    spec.cancel = &cancel;
    append_log(build.build_log, "\n$ " + join_words(spec.argv) + "\n");
    const ProcessResult linked = run_process(spec);
    append_log(build.build_log, linked.output);
    if (linked.cancelled) check_cancel();
    if (!linked.ok()) fail_step("linking " + recipe.artifact, linked);
    require_output("linking " + recipe.artifact, artifact, linked);
    if (options.progress) options.progress({BuildEvent::Kind::link_finished, recipe.artifact, linked.seconds, false});

    const FinishedPlugin plugin = finish_plugin_artifact(artifact, content_key, recipe, build.build_log);

    // Only the entry's files travel: scratch objects and logs stay out of the immutable entry.
    boost::system::error_code ignored;
    fs::remove_all(objects, ignored);
    for (const auto &unit : units_) fs::remove(staging / (unit.stem + ".log"), ignored);

    Produced produced;
    describe_plugin(produced, recipe, plugin, toolkit_version_from(toolchain_.nvcc_version));
    for (const auto &unit : units_) produced.units.push_back(unit.report);
    return produced;
  }

 private:
  const BuilderContext &context_;
  ToolchainIdentity toolchain_;
  std::vector<Unit> units_;
};

}  // namespace

std::unique_ptr<Backend> make_nvcc_backend(const BuilderContext &context) {
  return std::make_unique<NvccBackend>(context);
}

}  // namespace kiln::builder
