#include "build/builder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <regex>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "build/jobs.hpp"
#include "build/keys.hpp"
#include "build/nvcc_backend.hpp"
#include "build/process.hpp"
#include "device/identity_json.hpp"
#include "load/stamp.hpp"
#include "store/digest.hpp"
#include "store/entry.hpp"
#include "store/files.hpp"
#include "store/locks.hpp"
#include "store/manifest.hpp"
#include "store/names.hpp"
#include "store/sweep.hpp"

#ifndef KILN_ABI_SOURCE_DIR
#define KILN_ABI_SOURCE_DIR ""
#endif

namespace kiln::build {
namespace {

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string join(const std::vector<std::string> &words) {
  std::string text;
  for (const auto &word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

void append(const fs::path &file, const std::string &text) {
  std::ofstream out(file.string(), std::ios::app);
  out << text;
}

std::string file_digest(const std::string &file) {
  store::Hasher hasher;
  hasher.add_file(file);
  return hasher.hex();
}

// Removes a staging directory unless released: a failed or cancelled build leaves nothing.
class StagingGuard {
 public:
  explicit StagingGuard(fs::path dir) : dir_(std::move(dir)) {}
  ~StagingGuard() {
    if (!dir_.empty()) {
      boost::system::error_code ignored;
      fs::remove_all(dir_, ignored);
    }
  }
  StagingGuard(const StagingGuard &) = delete;
  StagingGuard &operator=(const StagingGuard &) = delete;
  void release() { dir_.clear(); }

 private:
  fs::path dir_;
};


struct Hit {
  std::string content_key;
  std::vector<Reason> stale;  // non-empty: a pointer exists but its entry is not current
  bool found = false;
};

Hit lookup(const store::ConsumerLayout &layout, const std::string &input_key, const BuildIdentity &identity,
           const LogCallback &log) {
  Hit hit;
  std::string key;
  try {
    key = store::read_file(layout.bykey(input_key));
  } catch (const NotFoundError &) {
    return hit;
  }
  key.erase(std::remove_if(key.begin(), key.end(), [](char c) { return c == '\n' || c == ' '; }), key.end());
  if (!store::is_valid_key(key)) {
    if (log) log(LogLevel::warning, "bykey pointer " + layout.bykey(input_key).string() + " is damaged; rebuilding");
    return hit;
  }
  const fs::path entry = layout.entry(key);
  try {
    const store::EntryMeta meta = store::read_entry_meta(entry);
    const auto recorded_json = nlohmann::json::parse(store::read_file(entry / store::kIdentityFile));
    const ArtifactIdentity recorded = device::artifact_identity_from_json(recorded_json, (entry / store::kIdentityFile).string());
    std::map<std::string, std::string> fields(recorded.provenance.begin(), recorded.provenance.end());
    hit.stale = identity_differences(fields, identity.fields());
    if (!fs::exists(entry / meta.file)) hit.stale.push_back({"artifact_file", meta.file, "(missing)", "entry damaged"});
  } catch (const std::exception &error) {
    hit.stale.push_back({"entry", key, "(unreadable)", error.what()});
  }
  hit.content_key = key;
  hit.found = hit.stale.empty();
  if (!hit.found && log) {
    for (const auto &reason : hit.stale) log(LogLevel::info, "stale build of " + layout.consumer() + ": " + reason.to_string());
  }
  return hit;
}

void point_manifest(const store::ConsumerLayout &layout, const Recipe &recipe, const std::string &content_key,
                    const std::string &input_key) {
  const auto manifest = store::read_manifest(layout.manifest(), layout.consumer());
  if (manifest) {
    const auto it = manifest->artifacts.find(recipe.name);
    if (it != manifest->artifacts.end() && it->second.content_key == content_key && it->second.input_key == input_key) {
      return;  // already current: the hit path writes nothing
    }
  }
  store::update_manifest(layout, [&](store::Manifest &m) {
    m.artifacts[recipe.name] = {content_key, input_key, recipe.backend == "nvcc" ? "plugin" : "images",
                                store::utc_now_iso8601()};
  });
}

void write_bykey(const store::ConsumerLayout &layout, const std::string &input_key, const std::string &content_key) {
  store::create_directories(layout.bykey(input_key).parent_path());
  store::write_file_atomic(layout.bykey(input_key), content_key + "\n");
}

bool entry_intact(const fs::path &entry) {
  try {
    const store::EntryMeta meta = store::read_entry_meta(entry);
    return store::digest_file(entry / meta.file) == meta.digest;
  } catch (const Error &) {
    return false;
  }
}

[[noreturn]] void fail_step(const std::string &what, const ProcessResult &result, const fs::path &log_file) {
  std::string why = result.signal != 0 ? "killed by signal " + std::to_string(result.signal)
                                       : "exit code " + std::to_string(result.exit_code);
  throw BuildError(what + " failed (" + why + "); nothing was published. Its output:\n" + result.output +
                       (log_file.empty() ? "" : "\n(full log: " + log_file.string() + ")"),
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

}  // namespace

std::string default_abi_dir() {
  if (const char *dir = std::getenv("KILN_ABI_DIR"); dir != nullptr && *dir != '\0') return dir;
  return KILN_ABI_SOURCE_DIR;
}

int toolkit_version_from(const std::string &nvcc_version) {
  static const std::regex pattern(R"((?:cuda_|release )(\d+)\.(\d+))");
  std::smatch match;
  if (!std::regex_search(nvcc_version, match, pattern)) return 0;
  return std::stoi(match[1]) * 1000 + std::stoi(match[2]) * 10;
}

std::vector<Arch> resolve_archs(const Recipe &recipe, const BuildOptions &options,
                                const std::vector<DeviceIdentity> &devices) {
  std::vector<Arch> archs;
  if (!options.archs.empty()) {
    archs = options.archs;
  } else {
    for (const auto &name : recipe.archs) {
      if (name != "native") {
        archs.push_back(Arch::parse(name));
        continue;
      }
      if (devices.empty()) {
        throw UsageError("recipe " + recipe.file + " asks for \"native\" but no device is present: pass --arch "
                         "(e.g. --arch sm_87) or declare one with KILN_DEVICE=sm_87");
      }
      for (const auto &device : devices) archs.push_back(Arch::parse(device.arch_name()));
    }
  }
  std::sort(archs.begin(), archs.end(), [](const Arch &a, const Arch &b) { return a.to_string() < b.to_string(); });
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

BuildPlan plan_build(const Recipe &recipe, const BuildOptions &options, const BuilderContext &context) {
  BuildPlan plan;
  plan.consumer = recipe.consumer;
  plan.name = recipe.name;
  plan.archs = resolve_archs(recipe, options, context.devices);
  const ToolchainIdentity toolchain = identify_toolchain(fs::path());  // empty path: remember nothing
  plan.nvcc = toolchain.nvcc_path;
  plan.nvcc_version = toolchain.nvcc_version;
  plan.host_compiler = toolchain.host_cxx_version;
  const BuildIdentity identity = build_identity(recipe, plan.archs, toolchain, context.abi_dir);
  plan.input_key = input_key(recipe, identity);
  const store::ConsumerLayout layout(context.store_root, recipe.consumer);
  const Hit hit = lookup(layout, plan.input_key, identity, LogCallback());
  if (hit.found && !options.force) {
    plan.state = "cached";
    plan.content_key = hit.content_key;
    plan.steps.push_back("load " + layout.entry(hit.content_key).string());
    return plan;
  }
  plan.state = hit.content_key.empty() ? "missing" : (hit.found ? "cached" : "stale");
  if (!hit.content_key.empty()) plan.content_key = hit.content_key;
  plan.stale_reasons = hit.stale;
  for (const auto &generator : recipe.generators) plan.steps.push_back("generate " + generator.name + ": " + join(generator.command));
  for (const auto &source : recipe.sources) {
    plan.steps.push_back("compile " + fs::path(source).filename().string() +
                         (options.force ? " (forced)" : recipe.generators.empty() ? "" : " (object cache checked after generators run)"));
  }
  plan.steps.push_back("link " + recipe.artifact + " for " + [&] {
    std::string text;
    for (const auto &arch : plan.archs) text += (text.empty() ? "" : ",") + arch.to_string();
    return text;
  }());
  plan.steps.push_back("publish " + recipe.consumer + "/" + recipe.name + " into " + context.store_root.string());
  return plan;
}

BuildResult run_build(const Recipe &recipe, const BuildOptions &options, const BuilderContext &context) {
  if (recipe.backend != "nvcc") {
    throw UsageError("recipe " + recipe.file + ": backend \"" + recipe.backend + "\" builds device images; use the "
                     "device-image path (Runtime::build handles it) - internal routing error");
  }
  const auto start = Clock::now();
  const LogCallback &log = context.log;
  BuildResult result;
  result.consumer = recipe.consumer;
  result.name = recipe.name;
  result.archs = resolve_archs(recipe, options, context.devices);
  const ToolchainIdentity toolchain = identify_toolchain(context.toolchain_cache);
  const BuildIdentity identity = build_identity(recipe, result.archs, toolchain, context.abi_dir);
  result.input_key = input_key(recipe, identity);
  const store::ConsumerLayout layout(context.store_root, recipe.consumer);

  const auto finish_hit = [&](const std::string &content_key, BuildResult::Outcome outcome) {
    point_manifest(layout, recipe, content_key, result.input_key);
    result.content_key = content_key;
    result.entry_dir = layout.entry(content_key).string();
    result.outcome = outcome;
    result.seconds = seconds_since(start);
    return result;
  };
  if (!options.force) {
    const Hit hit = lookup(layout, result.input_key, identity, log);
    if (hit.found) return finish_hit(hit.content_key, BuildResult::Outcome::hit);
  }

  // One builder per input key across threads and processes; waiters re-check, then load.
  store::create_directories(layout.locks());
  store::FileLock lock(layout.locks() / (result.input_key + ".lock"));
  if (!options.force) {
    const Hit hit = lookup(layout, result.input_key, identity, log);
    if (hit.found) return finish_hit(hit.content_key, BuildResult::Outcome::hit);
  }

  store::create_directories(layout.entries());
  const int swept = store::sweep_dead_staging(layout);
  if (swept > 0 && log) log(LogLevel::info, "removed " + std::to_string(swept) + " staging director(ies) of dead builds");
  const fs::path staging = layout.new_staging_dir();
  const fs::path gen = staging / "gen", objects = staging / "obj", build_log = staging / store::kBuildLogFile;
  StagingGuard guard(staging);
  store::create_directories(gen);
  store::create_directories(objects);
  CancelToken cancel(options.cancel);  // cancelled by the caller, or by the first failing unit
  append(build_log, "kiln " + std::string(kVersion) + " build of " + recipe.consumer + "/" + recipe.name + " from " +
                        recipe.file + "\ninput key " + result.input_key + "\nnvcc " + toolchain.nvcc_path + " (" +
                        toolchain.nvcc_version + ")\nhost compiler " + toolchain.host_cxx_version + "\n");
  const auto check_cancel = [&] {
    if (cancel.cancelled()) throw Error(ErrorKind::other, "build of " + recipe.consumer + "/" + recipe.name + " cancelled; nothing was published");
  };

  // Generators, in order, in the recipe's directory.
  for (const auto &generator : recipe.generators) {
    check_cancel();
    if (options.progress) options.progress({BuildEvent::Kind::generator_started, generator.name, 0, false});
    ProcessSpec spec;
    spec.argv = substitute(generator.command, {{"{gen}", gen.string()}, {"{tool}", generator.tool}});
    spec.cwd = recipe.base_dir;
    spec.log_file = build_log.string();
    spec.cancel = &cancel;
    append(build_log, "\n$ (generator " + generator.name + ") " + join(spec.argv) + "\n");
    const ProcessResult run = run_process(spec);
    if (run.cancelled) check_cancel();
    if (!run.ok()) fail_step("generator " + generator.name, run, fs::path());
    for (const auto &output : generator.outputs) {
      if (!fs::is_regular_file(gen / output)) {
        throw BuildError("generator " + generator.name + " did not write its declared output " + output +
                             " into {gen}; fix the step's command or its \"outputs\"",
                         run.output);
      }
    }
    if (options.progress) options.progress({BuildEvent::Kind::generator_finished, generator.name, run.seconds, false});
  }

  // Content key: exactly what the compiler sees.
  std::vector<std::string> generated;
  for (const auto &generator : recipe.generators) {
    for (const auto &output : generator.outputs) generated.push_back((gen / output).string());
  }
  std::sort(generated.begin(), generated.end());
  const std::vector<std::string> headers = expand_headers(recipe);
  store::Hasher seen;  // every header-like input, as one set: an edit rebuilds every unit
  for (const auto &file : generated) seen.add_field("generated/" + fs::path(file).filename().string(), file_digest(file));
  for (const auto &file : headers) seen.add_field(abstract_path(file, recipe.base_dir), file_digest(file));
  seen.add_field("abi", identity.abi_headers);
  const std::string headers_digest = seen.hex();

  std::vector<Unit> units;
  for (const auto &source : recipe.sources) {
    Unit unit;
    unit.source = source;
    unit.stem = fs::path(source).stem().string();
    unit.command = compile_command(recipe, result.archs, source);
    store::Hasher key;
    key.add_field("key", "unit")
        .add_field("toolchain", toolchain.digest())
        .add_field("headers", headers_digest)
        .add_field("source", abstract_path(source, recipe.base_dir))
        .add_field("bytes", file_digest(source))
        .add_field("command", join(unit.command));
    unit.key = key.hex();
    unit.cached_object = layout.objects() / (unit.stem + "-" + unit.key + ".o");
    unit.report.name = fs::path(source).filename().string();
    units.push_back(std::move(unit));
  }
  std::vector<std::string> abstract_objects;
  for (const auto &unit : units) abstract_objects.push_back("$OBJ/" + unit.stem + "-" + unit.key + ".o");
  const std::vector<std::string> link = link_command(recipe, result.archs, abstract_objects);
  store::Hasher content;
  content.add_field("key", "content")
      .add_field("key_schema", std::to_string(kKeySchema))
      .add_field("toolchain", toolchain.digest())
      .add_field("headers", headers_digest)
      .add_field("artifact", recipe.artifact)
      .add_field("link", join(link));
  for (const auto &unit : units) content.add_field("unit", unit.key);
  result.content_key = content.hex();
  const fs::path entry = layout.entry(result.content_key);
  append(build_log, "content key " + result.content_key + "\n");

  if (!options.force && fs::exists(entry) && entry_intact(entry)) {
    write_bykey(layout, result.input_key, result.content_key);
    if (log) log(LogLevel::info, recipe.consumer + "/" + recipe.name + ": inputs changed but compile the same; reusing " + result.content_key);
    return finish_hit(result.content_key, BuildResult::Outcome::reused);
  }

  // Units, in parallel, bounded by cores and by memory; each from the object cache when seen.
  store::create_directories(layout.objects());
  const fs::path abi_dir = context.abi_dir;
  const Placeholders paths = {{"$GEN", gen.string()}, {"$RECIPE", recipe.base_dir}, {"$ABI", abi_dir.string()}};
  const unsigned requested = options.jobs != 0 ? options.jobs : default_jobs();
  const unsigned jobs = bounded_jobs(requested, recipe.unit_memory_mb * 1024 * 1024, available_memory_bytes());
  append(build_log, std::to_string(units.size()) + " unit(s), " + std::to_string(jobs) + " job(s) at once\n");
  std::mutex log_mutex;
  run_parallel(units.size(), jobs, [&](std::size_t index) {
    Unit &unit = units[index];
    if (options.progress) options.progress({BuildEvent::Kind::unit_started, unit.report.name, 0, false});
    const auto unit_start = Clock::now();
    if (!options.force && fs::is_regular_file(unit.cached_object)) {
      unit.object = unit.cached_object;
      unit.report.cached = true;
    } else {
      unit.object = objects / (unit.stem + ".o");
      const fs::path unit_log = staging / (unit.stem + ".log");
      ProcessSpec spec;
      spec.argv = substitute(unit.command, paths);
      spec.argv = substitute(spec.argv, {{"$OUT", unit.object.string()}});
      spec.argv.insert(spec.argv.begin(), toolchain.nvcc_path);
      spec.log_file = unit_log.string();
      spec.cancel = &cancel;
      const ProcessResult run = run_process(spec);
      {
        std::lock_guard<std::mutex> guard_log(log_mutex);
        append(build_log, "\n$ " + join(spec.argv) + "\n" + run.output);
      }
      if (run.cancelled) return;
      if (!run.ok()) fail_step("compiling " + unit.report.name, run, fs::path());
      // Into the object cache atomically and durably: a torn object must never be linked.
      const fs::path temp = layout.objects() / ("." + unit.stem + ".tmp-" + store::unique_suffix());
      store::copy_file_synced(unit.object, temp);
      fs::rename(temp, unit.cached_object);
    }
    unit.report.seconds = seconds_since(unit_start);
    {
      std::lock_guard<std::mutex> guard_log(log_mutex);
      append(build_log, "unit " + unit.report.name + ": " + (unit.report.cached ? "cached" : "compiled") + " in " +
                            std::to_string(unit.report.seconds) + " s\n");
    }
    if (options.progress) {
      options.progress({BuildEvent::Kind::unit_finished, unit.report.name, unit.report.seconds, unit.report.cached});
    }
  }, cancel);
  check_cancel();
  for (const auto &unit : units) result.units.push_back(unit.report);

  // Link.
  if (options.progress) options.progress({BuildEvent::Kind::link_started, recipe.artifact, 0, false});
  const fs::path artifact = staging / recipe.artifact;
  std::vector<std::string> link_objects;
  for (const auto &unit : units) link_objects.push_back(unit.object.string());
  ProcessSpec spec;
  spec.argv = link_command(recipe, result.archs, link_objects);
  spec.argv = substitute(spec.argv, paths);
  spec.argv = substitute(spec.argv, {{"$OUT", artifact.string()}});
  spec.argv.insert(spec.argv.begin(), toolchain.nvcc_path);
  spec.cancel = &cancel;
  append(build_log, "\n$ " + join(spec.argv) + "\n");
  const ProcessResult linked = run_process(spec);
  append(build_log, linked.output);
  if (linked.cancelled) check_cancel();
  if (!linked.ok()) fail_step("linking " + recipe.artifact, linked, fs::path());
  if (options.progress) options.progress({BuildEvent::Kind::link_finished, recipe.artifact, linked.seconds, false});

  // Stamp the content key into the plugin, then record and publish.
  std::string bytes = store::read_file(artifact);
  const load::FileStamp stamp = load::find_stamp(bytes, artifact.string());
  load::write_stamp_key(bytes, stamp, result.content_key);
  fs::remove(artifact);
  store::write_file_atomic(artifact, bytes, 0755);
  ArtifactIdentity artifact_identity;
  artifact_identity.key_schema = kKeySchema;
  artifact_identity.artifact_schema = kArtifactSchema;
  artifact_identity.abi_version = stamp.abi_version;
  artifact_identity.archs = result.archs;
  artifact_identity.cuda_toolkit_version = toolkit_version_from(toolchain.nvcc_version);
  for (const auto &[field, value] : identity.fields()) artifact_identity.provenance[field] = value;
  artifact_identity.provenance["input_key"] = result.input_key;
  artifact_identity.provenance["recipe"] = recipe.file;
  store::EntryMeta meta{result.content_key, "plugin", recipe.artifact, store::digest_hex(bytes), bytes.size(),
                        store::utc_now_iso8601()};
  store::write_file_atomic(staging / store::kMetaFile, store::serialize_entry_meta(meta));
  store::write_file_atomic(staging / store::kIdentityFile, device::to_json(artifact_identity).dump(2) + "\n");
  append(build_log, "built in " + std::to_string(seconds_since(start)) + " s\n");
  // Only the entry's files travel: scratch objects and logs stay out of the immutable entry.
  boost::system::error_code ignored;
  fs::remove_all(objects, ignored);
  for (const auto &unit : units) fs::remove(staging / (unit.stem + ".log"), ignored);
  const bool fresh = store::commit_staging(staging, entry);
  guard.release();
  write_bykey(layout, result.input_key, result.content_key);
  finish_hit(result.content_key, fresh ? BuildResult::Outcome::built : BuildResult::Outcome::reused);
  result.outcome = fresh ? BuildResult::Outcome::built : BuildResult::Outcome::reused;
  if (log) {
    log(LogLevel::info, "built " + recipe.consumer + "/" + recipe.name + " as " + result.content_key + " in " +
                            std::to_string(result.seconds) + " s");
  }
  return result;
}

}  // namespace kiln::build
