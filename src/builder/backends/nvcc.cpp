#include "support/words.hpp"
#include "support/elapsed.hpp"
#include "builder/backends/nvcc.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "builder/arch_support.hpp"
#include "builder/backend.hpp"
#include "builder/dependencies.hpp"
#include "builder/jobs.hpp"
#include "builder/toolchain.hpp"
#include "builder/plugin_artifact.hpp"
#include "files/digest.hpp"
#include "files/file_identity.hpp"
#include "files/files.hpp"
#include "files/remove_tree.hpp"
#include "support/environment.hpp"

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
      "-c", abstract_path(unit, recipe.base_dir), "-o", "$OUT", "-MMD", "-MF", "$DEP", "-std=c++17",
      // Plugins export only kiln_plugin_negotiate and must unload cleanly (abi/README.md).
      "-Xcompiler=-fPIC,-fvisibility=hidden,-fvisibility-inlines-hidden,-fno-gnu-unique", "-I$ABI", "-I$GEN",
      // The same inputs give the same bytes (docs/architecture.md §3): nvcc's intermediate files
      // beside the object, not pid-named in /tmp (the host object names the file it compiled);
      // its generated names seeded per unit; the staging directory mapped away wherever the host
      // compiler records a path (debug info, __FILE__ of generated headers).
      "-objtemp", "-frandom-seed=" + boost::filesystem::path(unit).filename().string(),
      "-Xcompiler=-ffile-prefix-map=$STAGING=."};
  for (const auto &dir : recipe.include_dirs) command.push_back("-I" + abstract_path(dir, recipe.base_dir));
  for (const auto &define : recipe.defines) command.push_back("-D" + define);
  for (const auto &flag : gencode_flags(archs)) command.push_back(flag);
  for (const auto &flag : recipe.flags) command.push_back(flag);
  return command;
}

// Whether the recipe's flags choose nvcc's host compiler themselves.
bool names_host_compiler(const std::vector<std::string> &flags) {
  return std::any_of(flags.begin(), flags.end(), [](const std::string &flag) {
    return flag == "-ccbin" || flag == "--compiler-bindir" || flag.rfind("-ccbin=", 0) == 0 ||
           flag.rfind("--compiler-bindir=", 0) == 0;
  });
}

std::string xcompiler_escaped(const std::string &value) {
  std::string escaped;
  for (const char c : value) {
    if (c == ',') escaped += '\\';
    escaped += c;
  }
  return escaped;
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
    std::string recorded = files::read_file(digest_beside(object), files::FileOrigin::store, 4096);
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
  std::string base_key;              // toolchain, declared headers, source, command
  // base key + the digests of the headers it includes (dependencies.hpp): names its object.
  // Empty until known: from the dependencies its last compile recorded, else from this compile's.
  std::string key;
  std::map<std::string, std::string> dependencies;  // recorded path -> digest
  fs::path object;                   // what the link uses
  UnitReport report;
};

std::string unit_key(const std::string &base_key, const std::map<std::string, std::string> &dependencies) {
  return key_with_dependencies("unit", base_key, dependencies);
}

// The declared headers, the generators' outputs and the ABI, as one set: an edit to one of them
// rebuilds every unit (the compiler's dependencies refine this per unit).
std::string declared_headers_digest(const Recipe &recipe, const std::vector<std::string> &generated,
                                    const std::string &abi_digest) {
  files::Hasher seen;
  for (const auto &file : generated) seen.add_field("generated/" + fs::path(file).filename().string(), input_file_digest(file));
  for (const auto &file : expand_headers(recipe)) seen.add_field(abstract_path(file, recipe.base_dir), input_file_digest(file));
  seen.add_field("abi", abi_digest);
  return seen.hex();
}

fs::path object_file(const fs::path &objects, const Unit &unit) { return objects / (unit.stem + "-" + unit.key + ".o"); }
fs::path dependency_record_file(const fs::path &objects, const Unit &unit) {
  return objects / (unit.stem + "-" + unit.base_key + ".deps");
}

class NvccBackend final : public Backend {
 public:
  explicit NvccBackend(const BuilderContext &context) : context_(context) {}

  BuildIdentity identity(const Recipe &recipe, const std::vector<Arch> &archs, bool remember) override {
    toolchain_ = identify_toolchain(remember ? context_.toolchain_cache : fs::path());  // empty: remember nothing
    toolchain_.environment = toolchain_environment(recipe.backend);
    require_supported_archs(archs, toolchain_.gpu_codes,
                            "nvcc " + (toolchain_.nvcc_release.empty() ? toolchain_.nvcc_version : toolchain_.nvcc_release) +
                                " (" + toolchain_.nvcc_path + ")",
                            recipe.file);
    return build_identity(recipe, archs, toolchain_, context_.abi_dir, tool_digest_memo(context_, remember));
  }

  std::string toolchain_text() const override {
    return "nvcc " + toolchain_.nvcc_path + " (" + toolchain_.nvcc_version + ")\nhost compiler " +
           toolchain_.host_cxx_version + "\n";
  }

  // Units the object cache holds are counted as cached; with generators their outputs are
  // unknown until they run, so nothing can be said.
  void plan(const Recipe &recipe, const BuildOptions &options, const BuildIdentity &identity,
            BuildPlan &plan) const override {
    plan.nvcc = toolchain_.nvcc_path;
    plan.nvcc_version = toolchain_.nvcc_version;
    plan.host_compiler = toolchain_.host_cxx_version;
    const bool knowable = recipe.generators.empty() && !options.force;
    const fs::path objects = context_.storage->writable().layout(recipe.consumer).objects();
    const std::vector<Unit> units =
        knowable ? make_units(recipe, plan.archs, declared_headers_digest(recipe, {}, identity.abi_headers), objects)
                 : std::vector<Unit>();
    plan.units = recipe.sources.size();
    for (std::size_t i = 0; i < recipe.sources.size(); ++i) {
      std::string why_not;
      const bool cached = knowable && !units[i].key.empty() && cached_object_usable(object_file(objects, units[i]), &why_not);
      if (cached) ++plan.units_cached;
      plan.steps.push_back((cached ? "take " : "compile ") + fs::path(recipe.sources[i]).filename().string() +
                           (options.force       ? " (forced)"
                            : cached            ? " from the object cache"
                            : !knowable         ? " (object cache checked after generators run)"
                                                : ""));
    }
    std::string archs;
    for (const auto &arch : plan.archs) archs += (archs.empty() ? "" : ",") + arch.to_string();
    plan.steps.push_back("link " + recipe.artifact + " for " + archs);
  }

  std::optional<std::string> content_key(const StagedBuild &build) override {
    headers_digest_ = declared_headers_digest(build.recipe, build.generated, build.identity.abi_headers);
    units_ = make_units(build.recipe, build.archs, headers_digest_, build.layout.objects());
    for (const auto &unit : units_) {
      if (unit.key.empty()) return std::nullopt;  // its dependencies come from its compile
    }
    return content_of(build.recipe, build.archs);
  }

  Produced compile(const StagedBuild &build, const std::string &known_key, const SettleContentKey &settle) override {
    const Recipe &recipe = build.recipe;
    const BuildOptions &options = build.options;
    const fs::path &staging = build.staging;
    const fs::path scratch = staging / "obj";
    files::create_directories(scratch);
    CancelToken &cancel = build.cancel;
    const auto check_cancel = [&] {
      if (cancel.cancelled()) throw Error(ErrorKind::other, "build of " + recipe.consumer + "/" + recipe.name + " cancelled; nothing was published");
    };

    // Units, in parallel, bounded by cores and by memory; each from the object cache when seen.
    const fs::path objects = build.layout.objects();
    files::create_directories(objects);
    const Placeholders paths = {{"$GEN", build.gen.string()},
                                {"$RECIPE", recipe.base_dir},
                                {"$ABI", context_.abi_dir},
                                {"$STAGING", xcompiler_escaped(staging.string())}};
    const DependencyRoots roots =  // nvcc runs in this process's directory
        dependency_roots(recipe.base_dir, context_.abi_dir, staging, toolchain_.nvcc_path, fs::current_path().string());
    const unsigned requested = options.jobs != 0 ? options.jobs : default_jobs();
    const unsigned jobs = bounded_jobs(requested, recipe.unit_memory_mb * 1024 * 1024, available_memory_bytes());
    append_log(build.build_log, std::to_string(units_.size()) + " unit(s), " + std::to_string(jobs) + " job(s) at once\n");
    std::mutex log_mutex;
    const auto log_line = [&](const std::string &line) {
      std::lock_guard<std::mutex> guard_log(log_mutex);
      append_log(build.build_log, line);
    };
    if (options.progress) {
      options.progress({BuildEvent::Kind::units_queued, recipe.consumer + "/" + recipe.name, 0, false, units_.size()});
    }
    run_parallel(units_.size(), jobs, [&](std::size_t index) {
      Unit &unit = units_[index];
      if (options.progress) options.progress({BuildEvent::Kind::unit_started, unit.report.name, 0, false});
      const auto unit_start = Clock::now();
      std::string unusable;
      const bool reuse = !options.force && !unit.key.empty() && cached_object_usable(object_file(objects, unit), &unusable);
      if (!unusable.empty()) {
        const std::string message = "object cache: " + object_file(objects, unit).string() + " " + unusable +
                                    "; compiling " + unit.report.name + " again";
        log_line(message + "\n");
        if (context_.log) context_.log(LogLevel::warning, message);
      }
      if (reuse) {
        unit.object = object_file(objects, unit);
        unit.report.cached = true;
      } else {
        compile_unit(build, unit, paths, roots, scratch, log_line);
        if (unit.object.empty()) return;  // cancelled
      }
      unit.report.seconds = seconds_since(unit_start);
      log_line("unit " + unit.report.name + ": " + (unit.report.cached ? "cached" : "compiled") + " in " +
               std::to_string(unit.report.seconds) + " s\n");
      if (options.progress) {
        options.progress({BuildEvent::Kind::unit_finished, unit.report.name, unit.report.seconds, unit.report.cached});
      }
    }, cancel);
    check_cancel();

    // Every unit's key is known now: so is the content key, and whether an entry has it already.
    const std::string content_key = content_of(recipe, build.archs);
    boost::system::error_code ignored;
    if (content_key != known_key && !settle(content_key)) {
      files::remove_tree(scratch);
      Produced existing;
      existing.settled_on_existing = true;
      return existing;
    }

    // Link.
    if (options.progress) options.progress({BuildEvent::Kind::link_started, recipe.artifact, 0, false});
    const fs::path artifact = staging / recipe.artifact;
    std::vector<std::string> link_objects;
    for (const auto &unit : units_) link_objects.push_back(unit.object.string());
    ProcessSpec spec;
    spec.argv = link_command(recipe, build.archs, link_objects);
    spec.argv = substitute(spec.argv, paths);
    spec.argv = substitute(spec.argv, {{"$OUT", artifact.string()}});
    spec.argv = nvcc_argv(recipe, std::move(spec.argv));
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
    files::remove_tree(scratch);
    for (const auto &unit : units_) fs::remove(staging / (unit.stem + ".log"), ignored);

    Produced produced;
    describe_plugin(produced, recipe, plugin, toolkit_version_from(toolchain_.nvcc_version));
    for (const auto &unit : units_) {
      produced.units.push_back(unit.report);
      for (const auto &[path, digest] : unit.dependencies) produced.provenance[dependency_field(path)] = digest;
    }
    return produced;
  }

 private:
  // The units with their base keys, and their full keys where their last compile recorded its
  // dependencies (read from objects/, digested now).
  std::vector<Unit> make_units(const Recipe &recipe, const std::vector<Arch> &archs, const std::string &headers_digest,
                               const fs::path &objects) const {
    std::vector<Unit> units;
    for (const auto &source : recipe.sources) {
      Unit unit;
      unit.source = source;
      unit.stem = fs::path(source).stem().string();
      unit.command = compile_command(recipe, archs, source);
      files::Hasher key;
      key.add_field("key", "unit")
          .add_field("toolchain", toolchain_.digest())
          .add_field("headers", headers_digest)
          .add_field("source", abstract_path(source, recipe.base_dir))
          .add_field("bytes", input_file_digest(source))
          .add_list("command", unit.command);
      unit.base_key = key.hex();
      unit.report.name = fs::path(source).filename().string();
      if (const auto recorded = read_dependency_record(dependency_record_file(objects, unit))) {
        unit.dependencies = dependency_digests(*recorded, recipe.base_dir);
        unit.key = unit_key(unit.base_key, unit.dependencies);
      }
      units.push_back(std::move(unit));
    }
    return units;
  }

  // The content key over units_' keys (all known) and the link.
  std::string content_of(const Recipe &recipe, const std::vector<Arch> &archs) const {
    std::vector<std::string> abstract_objects;
    for (const auto &unit : units_) abstract_objects.push_back("$OBJ/" + unit.stem + "-" + unit.key + ".o");
    files::Hasher content;
    content.add_field("key", "content")
        .add_field("key_schema", std::to_string(kKeySchema))
        .add_field("toolchain", toolchain_.digest())
        .add_field("headers", headers_digest_)
        .add_field("artifact", recipe.artifact)
        .add_list("link", link_command(recipe, archs, abstract_objects));
    for (const auto &unit : units_) content.add_field("unit", unit.key);
    return content.hex();
  }

  // nvcc -c of one unit; its depfile gives the headers it included, hence its key; the object
  // goes into the object cache under that key, the dependencies beside it. A header edited while
  // the unit compiled leaves the object unknown to be of either version: the build fails.
  template <typename LogLine>
  void compile_unit(const StagedBuild &build, Unit &unit, const Placeholders &paths, const DependencyRoots &roots,
                    const fs::path &scratch, const LogLine &log_line) {
    const fs::path objects = build.layout.objects();
    const fs::path output = scratch / (unit.stem + ".o"), depfile = scratch / (unit.stem + ".d");
    const fs::path unit_log = build.staging / (unit.stem + ".log");
    ProcessSpec spec;
    spec.argv = substitute(unit.command, paths);
    spec.argv = substitute(spec.argv, {{"$OUT", output.string()}, {"$DEP", depfile.string()}});
    spec.argv = nvcc_argv(build.recipe, std::move(spec.argv));
    spec.log_file = unit_log.string();
    spec.cancel = &build.cancel;
    const std::int64_t started_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch()).count();
    const ProcessResult run = run_process(spec);
    log_line("\n$ " + join_words(spec.argv) + "\n" + run.output);
    if (run.cancelled) return;
    if (!run.ok()) fail_step("compiling " + unit.report.name, run);
    require_output("compiling " + unit.report.name, output, run);

    std::vector<std::string> recorded;
    try {
      recorded = recorded_dependencies(parse_depfile(files::read_file(depfile, files::FileOrigin::input)), unit.source, roots);
    } catch (const NotFoundError &) {
      log_line("nvcc wrote no dependency file for " + unit.report.name +
               " (a wrapper that drops -MF?): only its declared headers key it\n");
    }
    for (const auto &path : recorded) {
      const auto now = files::identify(dependency_file(path, build.recipe.base_dir));
      if (now && std::max(now->mtime_ns, now->ctime_ns) > started_ns) {
        throw BuildError("compiling " + unit.report.name + ": " + path + " changed while it was compiled, so which " +
                             "version the object holds is unknown; nothing was published. Run the build again.",
                         run.output);
      }
    }
    unit.dependencies = dependency_digests(recorded, build.recipe.base_dir);
    unit.key = unit_key(unit.base_key, unit.dependencies);
    unit.object = output;

    // Into the object cache atomically and durably: a torn object must never be linked.
    const fs::path cached = object_file(objects, unit);
    const fs::path temp = objects / ("." + unit.stem + ".tmp-" + files::unique_suffix());
    files::copy_file_synced(output, temp);
    const std::string digest = input_file_digest(temp.string());
    fs::rename(temp, cached);
    files::write_file_atomic(digest_beside(cached), digest + "\n");
    write_dependency_record(dependency_record_file(objects, unit), recorded);
  }

  // nvcc and its arguments as run. nvcc runs the host compiler kiln identified and keyed
  // (-ccbin), not whichever g++ comes first on PATH, unless the recipe's flags choose one or
  // NVCC_CCBIN does (an environment variable the key holds). Not in the keyed command: the
  // compiler's path differs between machines, its identity is keyed with the toolchain.
  std::vector<std::string> nvcc_argv(const Recipe &recipe, std::vector<std::string> args) const {
    std::vector<std::string> argv = {toolchain_.nvcc_path};
    argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
    if (!names_host_compiler(recipe.flags) && !names_host_compiler(recipe.link_flags) &&
        !support::env_value("NVCC_CCBIN")) {
      argv.insert(argv.end(), {"-ccbin", toolchain_.host_cxx_command});
    }
    return argv;
  }

  const BuilderContext &context_;
  ToolchainIdentity toolchain_;
  std::string headers_digest_;
  std::vector<Unit> units_;
};

}  // namespace

std::unique_ptr<Backend> make_nvcc_backend(const BuilderContext &context) {
  return std::make_unique<NvccBackend>(context);
}

}  // namespace kiln::builder
