// Build on miss (DESIGN §3): one flow for every backend (src/build/backend.hpp).
#include "support/words.hpp"
#include "support/elapsed.hpp"
#include "builder/builder.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "builder/backend.hpp"
#include "builder/keys.hpp"
#include "builder/nvcc_backend.hpp"
#include "builder/process.hpp"
#include "device/identity_json.hpp"
#include "store/digest.hpp"
#include "store/entry.hpp"
#include "store/files.hpp"
#include "store/locks.hpp"
#include "store/manifest.hpp"
#include "store/names.hpp"
#include "store/sweep.hpp"
#include "support/fault_point.hpp"

#ifndef KILN_ABI_SOURCE_DIR
#define KILN_ABI_SOURCE_DIR ""
#endif

namespace kiln::builder {
namespace {

using support::join_words;
using support::seconds_since;

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

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

std::unique_ptr<Backend> make_backend(const Recipe &recipe, const BuilderContext &context) {
  if (recipe.backend == "nvcc") return make_nvcc_backend(context);
  if (recipe.backend == "nvrtc") return make_jit_backend(context);
  throw UsageError("recipe " + recipe.file + ": unknown backend \"" + recipe.backend + "\" (use nvcc or nvrtc)");
}

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
    if (!store::entry_files_present(entry, meta)) hit.stale.push_back({"artifact_file", meta.file, "(missing)", "entry damaged"});
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
  const std::string kind = recipe.backend == "nvcc" ? "plugin" : "images";
  const auto manifest = store::read_manifest(layout.manifest(), layout.consumer());
  if (manifest) {
    const auto it = manifest->artifacts.find(recipe.name);
    if (it != manifest->artifacts.end() && it->second.content_key == content_key && it->second.input_key == input_key &&
        it->second.kind == kind) {
      return;  // already current: the hit path writes nothing
    }
  }
  store::update_manifest(layout, [&](store::Manifest &m) {
    m.artifacts[recipe.name] = {content_key, input_key, kind, store::utc_now_iso8601()};
  });
}

void write_bykey(const store::ConsumerLayout &layout, const std::string &input_key, const std::string &content_key) {
  store::create_directories(layout.bykey(input_key).parent_path());
  store::write_file_atomic(layout.bykey(input_key), content_key + "\n");
}

bool entry_intact(const fs::path &entry) {
  try {
    return store::entry_files_intact(entry, store::read_entry_meta(entry));
  } catch (const Error &) {
    return false;
  }
}

[[noreturn]] void fail_step(const std::string &what, const ProcessResult &result) {
  std::string why = result.signal != 0 ? "killed by signal " + std::to_string(result.signal)
                                       : "exit code " + std::to_string(result.exit_code);
  throw BuildError(what + " failed (" + why + "); nothing was published. Its output:\n" + result.output, result.output);
}

}  // namespace

void append_log(const fs::path &file, const std::string &text) {
  std::ofstream out(file.string(), std::ios::app);
  out << text;
}

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
  plan.backend = recipe.backend;
  plan.archs = resolve_archs(recipe, options, context.devices);
  const auto backend = make_backend(recipe, context);
  const BuildIdentity identity = backend->identity(recipe, plan.archs, /*remember=*/false);
  plan.input_key = input_key(recipe, identity);
  const store::ConsumerLayout layout(context.store_root, recipe.consumer);
  const Hit hit = lookup(layout, plan.input_key, identity, LogCallback());
  backend->plan(recipe, options, plan);  // toolchain fields
  if (hit.found && !options.force) {
    plan.state = "cached";
    plan.content_key = hit.content_key;
    plan.steps = {"load " + layout.entry(hit.content_key).string()};
    return plan;
  }
  plan.state = hit.content_key.empty() ? "missing" : (hit.found ? "cached" : "stale");
  if (!hit.content_key.empty()) plan.content_key = hit.content_key;
  plan.stale_reasons = hit.stale;
  std::vector<std::string> steps;
  for (const auto &generator : recipe.generators) steps.push_back("generate " + generator.name + ": " + join_words(generator.command));
  steps.insert(steps.end(), plan.steps.begin(), plan.steps.end());
  steps.push_back("publish " + recipe.consumer + "/" + recipe.name + " into " + context.store_root.string());
  plan.steps = std::move(steps);
  return plan;
}

BuildResult run_build(const Recipe &recipe, const BuildOptions &options, const BuilderContext &context) {
  const auto start = Clock::now();
  const LogCallback &log = context.log;
  BuildResult result;
  result.consumer = recipe.consumer;
  result.name = recipe.name;
  result.archs = resolve_archs(recipe, options, context.devices);
  const auto backend = make_backend(recipe, context);
  const BuildIdentity identity = backend->identity(recipe, result.archs, /*remember=*/true);
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
  const fs::path gen = staging / "gen", build_log = staging / store::kBuildLogFile;
  StagingGuard guard(staging);
  store::create_directories(gen);
  CancelToken cancel(options.cancel);  // cancelled by the caller, or by the first failing step
  append_log(build_log, "kiln " + std::string(kVersion) + " build of " + recipe.consumer + "/" + recipe.name + " from " +
                            recipe.file + " (backend " + recipe.backend + ")\ninput key " + result.input_key + "\n" +
                            backend->toolchain_text());
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
    append_log(build_log, "\n$ (generator " + generator.name + ") " + join_words(spec.argv) + "\n");
    const ProcessResult run = run_process(spec);
    if (run.cancelled) check_cancel();
    if (!run.ok()) fail_step("generator " + generator.name, run);
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
  const StagedBuild staged{recipe, options, context, result.archs, identity, layout, staging, gen, build_log, generated, cancel};
  result.content_key = backend->content_key(staged);
  const fs::path entry = layout.entry(result.content_key);
  append_log(build_log, "content key " + result.content_key + "\n");

  if (!options.force && fs::exists(entry) && entry_intact(entry)) {
    write_bykey(layout, result.input_key, result.content_key);
    if (log) log(LogLevel::info, recipe.consumer + "/" + recipe.name + ": inputs changed but compile the same; reusing " + result.content_key);
    return finish_hit(result.content_key, BuildResult::Outcome::reused);
  }

  check_cancel();
  Produced produced = backend->compile(staged, result.content_key);
  check_cancel();
  result.units = produced.units;

  // Record and publish.
  ArtifactIdentity artifact_identity;
  artifact_identity.key_schema = kKeySchema;
  artifact_identity.artifact_schema = kArtifactSchema;
  artifact_identity.abi_version = produced.abi_version;
  artifact_identity.archs = result.archs;
  if (produced.kind == "images") {  // the archs the images offer (a fatbin repeats them)
    artifact_identity.archs.clear();
    for (const auto &image : produced.images) {
      for (const auto &arch : image.kind == "fatbin" ? image.contains : std::vector<Arch>{image.arch}) {
        if (std::find(artifact_identity.archs.begin(), artifact_identity.archs.end(), arch) == artifact_identity.archs.end()) {
          artifact_identity.archs.push_back(arch);
        }
      }
    }
    std::sort(artifact_identity.archs.begin(), artifact_identity.archs.end(),
              [](const Arch &a, const Arch &b) { return a.to_string() < b.to_string(); });
  }
  artifact_identity.cuda_toolkit_version = produced.cuda_toolkit_version;
  for (const auto &[field, value] : identity.fields()) artifact_identity.provenance[field] = value;
  for (const auto &[field, value] : produced.provenance) artifact_identity.provenance[field] = value;
  artifact_identity.provenance["input_key"] = result.input_key;
  artifact_identity.provenance["recipe"] = recipe.file;
  store::EntryMeta meta{result.content_key, produced.kind, produced.file, produced.bytes_digest, produced.size,
                        store::utc_now_iso8601(), produced.images, produced.kernels};
  store::write_staging_file(staging / store::kMetaFile, store::serialize_entry_meta(meta));
  store::write_staging_file(staging / store::kIdentityFile, device::to_json(artifact_identity).dump(2) + "\n");
  append_log(build_log, "built in " + std::to_string(seconds_since(start)) + " s\n");
  if (fs::exists(entry) && !entry_intact(entry)) {
    // A damaged entry under our key (a torn or altered file; --force got us here) is moved
    // aside, never modified in place and never trusted, so that the fresh build takes its name.
    const fs::path aside = layout.entries() / (std::string(store::kStagingPrefix) + store::unique_suffix() + "-damaged");
    fs::rename(entry, aside);
    if (log) log(LogLevel::warning, "store entry " + entry.string() + " was damaged; moved aside to " + aside.string());
  }
  const bool fresh = store::commit_staging(staging, entry);
  guard.release();
  KILN_FAULT_POINT("build.after_entry");
  write_bykey(layout, result.input_key, result.content_key);
  KILN_FAULT_POINT("build.after_bykey");
  finish_hit(result.content_key, fresh ? BuildResult::Outcome::built : BuildResult::Outcome::reused);
  if (log) {
    log(LogLevel::info, "built " + recipe.consumer + "/" + recipe.name + " as " + result.content_key + " in " +
                            std::to_string(result.seconds) + " s");
  }
  return result;
}

}  // namespace kiln::builder
