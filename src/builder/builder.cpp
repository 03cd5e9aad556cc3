// Build on miss (docs/architecture.md §3): one flow for every backend (src/builder/backend.hpp).
#include "support/words.hpp"
#include "support/elapsed.hpp"
#include "builder/builder.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <memory>
#include <mutex>
#include <regex>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>
#include <kiln/module.hpp>

#include "builder/backend.hpp"
#include "builder/keys.hpp"
#include "builder/abi_headers.hpp"
#include "builder/dependencies.hpp"
#include "builder/generator_checks.hpp"
#include "builder/generators.hpp"
#include "builder/backends/nvcc.hpp"
#include "builder/process.hpp"
#include "builder/stale.hpp"
#include "artifact/identity_json.hpp"
#include "files/digest.hpp"
#include "store/entry.hpp"
#include "files/files.hpp"
#include "support/typed_errors.hpp"

namespace kiln::builder {
namespace {

using support::join_words;
using support::seconds_since;

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

std::unique_ptr<Backend> make_backend(const Recipe &recipe, const BuilderContext &context) {
  if (recipe.backend == "nvcc") return make_nvcc_backend(context);
  if (recipe.backend == "nvrtc") return make_nvrtc_backend(context);
  if (recipe.backend == "cmake") return make_cmake_backend(context);
  throw UsageError("recipe " + recipe.file + ": unknown backend \"" + recipe.backend + "\" (use nvcc, nvrtc or cmake)");
}

struct Hit {
  std::string content_key;
  std::vector<Reason> stale;  // non-empty: a pointer exists but its entry is not current
  bool found = false;
  const store::LocalStore *layer = nullptr;  // found in a read-only layer (nullptr: the writable cache)
};

// An entry's recorded provenance (identity.json): what it was built from.
std::map<std::string, std::string> recorded_provenance(const store::Storage &storage, const std::string &consumer,
                                                       const std::string &content_key) {
  const store::EntryRecords entry = storage.entry(consumer, content_key, consumer + " entry " + content_key);
  return {entry.identity.provenance.begin(), entry.identity.provenance.end()};
}

// The headers an entry's units included (recorded from the compiler, dependencies.hpp) that
// are not what they were: the input key covers only declared inputs, so this makes an edit to
// any included header a stale hit.
std::vector<Reason> changed_dependencies(const std::map<std::string, std::string> &provenance, const Recipe &recipe) {
  std::vector<Reason> changed;
  const std::string prefix = kDependencyField;
  for (auto it = provenance.lower_bound(prefix); it != provenance.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it) {
    const std::string path = it->first.substr(prefix.size());
    const std::string now = dependency_digests({path}, recipe.base_dir).at(path);
    if (now != it->second) changed.push_back({"header " + path, it->second, now, "an included header changed"});
  }
  return changed;
}

// Whether the entry `key` serves these inputs: its recorded identity is the current one, the
// headers its units included are unchanged, its files are there.
Hit check_entry(const store::LocalStore &store, const Recipe &recipe, const std::string &input_key,
                const std::string &key, const BuildIdentity &identity, const LogCallback &log) {
  const std::string &consumer = recipe.consumer;
  Hit hit;
  try {
    const store::EntryRecords entry = store.entry(consumer, key, consumer + " build " + input_key);
    std::map<std::string, std::string> fields(entry.identity.provenance.begin(), entry.identity.provenance.end());
    hit.stale = identity_differences(fields, identity.fields());
    for (auto &reason : changed_dependencies(fields, recipe)) hit.stale.push_back(std::move(reason));
    const fs::path dir = store.layout(consumer).entry(key);
    if (!store::entry_files_present(dir, entry.meta)) hit.stale.push_back({"artifact_file", entry.meta.file, "(missing)", "entry damaged"});
  } catch (const IoError &) {
    throw;  // EACCES, EIO: the entry is not known to be stale, and no reason to compile
  } catch (const std::exception &error) {
    hit.stale.push_back({"entry", key, "(unreadable)", error.what()});
  }
  hit.content_key = key;
  hit.found = hit.stale.empty();
  if (!hit.found && log) {
    for (const auto &reason : hit.stale) log(LogLevel::info, "stale build of " + consumer + ": " + reason.to_string());
  }
  return hit;
}

Hit lookup(const store::Storage &storage, const Recipe &recipe, const std::string &input_key,
           const BuildIdentity &identity, const LogCallback &log) {
  const auto key = storage.pointer(recipe.consumer, input_key, log);
  if (!key) return {};
  return check_entry(storage.writable(), recipe, input_key, *key, identity, log);
}

// A read-only layer (a vendor store) whose entry for these inputs is current and is what
// consumer/name resolves to: it serves the build as it serves loads, and nothing is written.
// An entry the name does not resolve to would leave a build whose result no load by name
// finds; that one is built (or hit) in the writable cache as before.
Hit layer_lookup(const store::Storage &storage, const Recipe &recipe, const std::string &input_key,
                 const BuildIdentity &identity, const LogCallback &log) {
  std::string resolved;
  try {
    resolved = storage.resolve(recipe.consumer, recipe.name)->content_key;
  } catch (const std::exception &) {
    return {};  // no layer names it (or it is damaged there: the load would say so)
  }
  for (const auto &layer : storage.layers()) {
    if (layer->writable()) continue;
    const auto key = layer->pointer(recipe.consumer, input_key, LogCallback());
    if (!key || *key != resolved) continue;
    Hit hit = check_entry(*layer, recipe, input_key, *key, identity, log);
    if (!hit.found) continue;
    hit.layer = layer.get();
    return hit;
  }
  return {};
}

// Where else a build's result may come from (none with use_remote off or --force, or when none
// is configured).
std::shared_ptr<const store::EntrySource> elsewhere_for(const BuilderContext &context, const BuildOptions &options) {
  return options.use_remote && !options.force && context.elsewhere ? context.elsewhere() : nullptr;
}

std::string kind_of(const Recipe &recipe) { return recipe.builds_plugin() ? kKindPlugin : kKindImages; }

// No bykey pointer for these inputs: why the entry the writable store's manifest names for
// consumer/name (built from other inputs) does not serve them. Empty when there is none, or
// when it was built from these very inputs (only its pointer is gone: the build reuses it).
std::vector<Reason> replaced_entry_reasons(const store::Storage &storage, const std::string &consumer,
                                           const std::string &name, const std::string &input_key,
                                           const BuildIdentity &identity, const InputRecords &records) {
  std::shared_ptr<const store::Manifest> manifest;
  try {
    manifest = storage.writable().manifest(consumer);
  } catch (const Error &) {
    return {};  // an unreadable manifest is the build's to report (and replace), not the plan's
  }
  if (!manifest) return {};
  const auto named = manifest->artifacts.find(name);
  if (named == manifest->artifacts.end() || named->second.input_key == input_key) return {};
  const std::string &content_key = named->second.content_key;
  try {
    return stale_reasons(recorded_provenance(storage, consumer, content_key), identity, records, input_key);
  } catch (const std::exception &error) {
    return {{"entry", content_key, "(unreadable)", error.what()}};
  }
}

}  // namespace

std::string how_it_ended(const ProcessResult &result) {
  return result.signal != 0 ? "killed by signal " + std::to_string(result.signal)
                            : "exit code " + std::to_string(result.exit_code);
}

void fail_step(const std::string &what, const ProcessResult &result) {
  // A compiler that could not write its output for a full disk (or quota) failed for the
  // machine, not the recipe: an I/O error, as kiln's own writes report it, so that a caller
  // retries after freeing space instead of taking the recipe for broken. Compilers say so with
  // strerror's text, which names the file they were writing.
  for (const int error : {ENOSPC, EDQUOT}) {
    if (result.output.find(std::strerror(error)) == std::string::npos) continue;
    throw IoError(what + " failed (" + how_it_ended(result) + "): " + std::strerror(error) +
                  support::io_fix(error) + ". Its output:\n" + result.output);
  }
  throw BuildError(what + " failed (" + how_it_ended(result) + "); nothing was published. Its output:\n" + result.output,
                   result.output);
}

void append_log(const fs::path &file, const std::string &text) {
  std::ofstream out(file.string(), std::ios::app);
  out << text;
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
  InputRecords records;
  plan.input_key = input_key(recipe, identity, &records);
  const store::Storage &storage = *context.storage;
  const store::ConsumerLayout layout = storage.writable().layout(recipe.consumer);
  Hit hit = lookup(storage, recipe, plan.input_key, identity, LogCallback());
  if (!hit.found) {
    if (const Hit layered = layer_lookup(storage, recipe, plan.input_key, identity, LogCallback()); layered.found) hit = layered;
  }
  backend->plan(recipe, options, identity, plan);  // toolchain fields, units
  if (hit.found && !options.force) {
    plan.state = "cached";
    plan.source = hit.layer != nullptr ? "layer " + hit.layer->root().string() : "local";
    plan.content_key = hit.content_key;
    plan.steps = {"load " + (hit.layer != nullptr ? hit.layer->layout(recipe.consumer) : layout).entry(hit.content_key).string()};
    return plan;
  }
  // A build would run the generators: what they would refuse is refused now.
  check_generators(recipe, options.cancel);
  plan.source = "build";
  if (const auto remote = elsewhere_for(context, options)) {
    if (const auto url = remote->locate(storage, recipe.consumer, plan.input_key)) plan.source = "remote " + *url;
  }
  if (hit.content_key.empty()) {
    add_recipe_records(recipe, identity, records);
    plan.stale_reasons = replaced_entry_reasons(storage, recipe.consumer, recipe.name, plan.input_key, identity, records);
    plan.state = plan.stale_reasons.empty() ? "missing" : "stale";
  } else {
    plan.state = hit.found ? "cached" : "stale";
    plan.content_key = hit.content_key;
    plan.stale_reasons = hit.stale;
  }
  std::vector<std::string> steps;
  for (const auto &generator : recipe.generators) steps.push_back("generate " + generator.name + ": " + join_words(generator.command));
  steps.insert(steps.end(), plan.steps.begin(), plan.steps.end());
  if (plan.source != "build") steps = {"download from " + plan.source.substr(7) + ", verify, commit"};
  steps.push_back("publish " + recipe.consumer + "/" + recipe.name + " into " + storage.writable().root().string());
  plan.steps = std::move(steps);
  return plan;
}

BuildResult run_build(const Recipe &recipe, const BuildOptions &caller_options, const BuilderContext &context) {
  const auto start = Clock::now();
  // Progress calls come from the units' worker threads: one at a time (recipe.hpp says so).
  BuildOptions options = caller_options;
  if (caller_options.progress) {
    options.progress = [mutex = std::make_shared<std::mutex>(), report = caller_options.progress](const BuildEvent &event) {
      std::lock_guard<std::mutex> guard(*mutex);
      report(event);
    };
  }
  const LogCallback &log = context.log;
  BuildResult result;
  result.consumer = recipe.consumer;
  result.name = recipe.name;
  result.archs = resolve_archs(recipe, options, context.devices);
  const auto backend = make_backend(recipe, context);
  const BuildIdentity identity = backend->identity(recipe, result.archs, /*remember=*/true);
  InputRecords records;
  result.input_key = input_key(recipe, identity, &records);
  const store::Storage &storage = *context.storage;
  const store::ConsumerLayout layout = storage.writable().layout(recipe.consumer);
  const store::Publication publication{recipe.consumer, recipe.name, "", result.input_key, kind_of(recipe), "", ""};

  const auto finish = [&](const std::string &content_key, BuildResult::Outcome outcome) {
    result.content_key = content_key;
    result.entry_dir = layout.entry(content_key).string();
    result.outcome = outcome;
    result.seconds = seconds_since(start);
    return result;
  };
  // An entry already there: only the pointers to it are written (where they differ).
  const auto finish_hit = [&](const std::string &content_key, BuildResult::Outcome outcome) {
    store::Publication pointed = publication;
    pointed.content_key = content_key;
    storage.point(pointed);
    return finish(content_key, outcome);
  };
  if (!options.force) {
    const Hit hit = lookup(storage, recipe, result.input_key, identity, log);
    if (hit.found) return finish_hit(hit.content_key, BuildResult::Outcome::hit);
    const Hit layered = layer_lookup(storage, recipe, result.input_key, identity, log);
    if (layered.found) {  // nothing to write: the layer names it, and loads find it there
      finish(layered.content_key, BuildResult::Outcome::hit);
      result.entry_dir = layered.layer->layout(recipe.consumer).entry(layered.content_key).string();
      result.layer = layered.layer->root().string();
      return result;
    }
  }

  // What plan refuses, a build refuses alike, before the store or a remote is touched.
  check_generators(recipe, options.cancel);
  // One builder per input key across threads and processes; waiters re-check, then load.
  const files::FileLock lock = storage.lock_input_key(recipe.consumer, result.input_key, options.cancel);
  if (!options.force) {
    const Hit hit = lookup(storage, recipe, result.input_key, identity, log);
    if (hit.found) return finish_hit(hit.content_key, BuildResult::Outcome::hit);
  }
  // The remotes: by input key, or -- when another machine is building it -- its upload.
  const auto remote = elsewhere_for(context, options);
  std::unique_ptr<store::EntrySource::Claim> claim;
  if (remote) {
    auto fetched = remote->find_by_input_key(storage, recipe.consumer, result.input_key);
    if (!fetched) claim = remote->claim(storage, recipe.consumer, result.input_key, options.cancel, &fetched);
    if (!fetched && options.cancel != nullptr && options.cancel->cancelled()) {
      throw Error(ErrorKind::other, "build of " + recipe.consumer + "/" + recipe.name + " cancelled while waiting for "
                                    "another machine's build; nothing was published");
    }
    if (fetched) {
      const Hit hit = check_entry(storage.writable(), recipe, result.input_key, fetched->content_key, identity, log);
      if (hit.found) {
        result.remote = fetched->from;
        result.remote_signed_by = fetched->signed_by;
        return finish_hit(hit.content_key, BuildResult::Outcome::fetched);
      }
      if (log) log(LogLevel::info, recipe.consumer + "/" + recipe.name + ": the remote's entry does not serve these inputs; building");
    }
  }
  if (options.remote_only) {
    throw NotFoundError("no remote cache has " + recipe.consumer + "/" + recipe.name + " (input key " + result.input_key +
                        ")" + (remote ? "" : ": none is configured (KILN_REMOTE, or remote = ... in kiln.conf)") +
                        "; build it (kiln build) or push it from a machine that has it (kiln remote push)");
  }
  add_recipe_records(recipe, identity, records);
  if (log) {
    for (const auto &reason : replaced_entry_reasons(storage, recipe.consumer, recipe.name, result.input_key, identity, records)) {
      log(LogLevel::info, "rebuilding " + recipe.consumer + "/" + recipe.name + ": " + reason.to_string());
    }
  }

  store::Staging staging = storage.stage(recipe.consumer, log);
  const fs::path gen = staging.dir() / "gen", build_log = staging.dir() / store::kBuildLogFile;
  files::create_directories(gen);
  CancelToken cancel(options.cancel);  // cancelled by the caller, or by the first failing step
  append_log(build_log, "kiln " + std::string(kVersion) + " build of " + recipe.consumer + "/" + recipe.name + " from " +
                            recipe.file + " (backend " + recipe.backend + ")\ninput key " + result.input_key + "\n" +
                            backend->toolchain_text());
  const auto check_cancel = [&] {
    if (cancel.cancelled()) throw Error(ErrorKind::other, "build of " + recipe.consumer + "/" + recipe.name + " cancelled; nothing was published");
  };

  // Generators, in order, in the recipe's directory (identical steps of other builds reused).
  run_generators({recipe, identity, options, layout, gen, build_log, cancel, log});

  // Content key: exactly what the compiler sees.
  std::vector<std::string> generated;
  for (const auto &generator : recipe.generators) {
    for (const auto &output : generator.outputs) generated.push_back((gen / output).string());
  }
  std::sort(generated.begin(), generated.end());
  const StagedBuild staged{recipe, options, context, result.archs, identity, layout, staging.dir(), gen, build_log, generated, cancel};
  // An entry of the content key serves: reused (known before compiling, or once the units that
  // had to compile said which headers they include).
  const auto entry_serves = [&](const std::string &content_key) {
    result.content_key = content_key;
    append_log(build_log, "content key " + content_key + "\n");
    if (options.force) return false;
    if (storage.entry_intact(recipe.consumer, content_key)) {
      if (log) log(LogLevel::info, recipe.consumer + "/" + recipe.name + ": inputs changed but compile the same; reusing " + content_key);
      return true;
    }
    if (!remote) return false;
    const auto fetched = remote->find_by_content_key(storage, recipe.consumer, content_key);
    if (fetched) {
      result.remote = fetched->from;
      result.remote_signed_by = fetched->signed_by;
    }
    return fetched.has_value();
  };
  const auto served_outcome = [&] { return result.remote.empty() ? BuildResult::Outcome::reused : BuildResult::Outcome::fetched; };
  // What went into the writable cache, to every read-write remote (never failing the build).
  const auto upload = [&](BuildResult::Outcome outcome) {
    if (!remote || outcome == BuildResult::Outcome::fetched) return;
    Resolution uploaded = storage.resolve_entry(recipe.consumer, result.content_key, recipe.name);
    uploaded.input_key = result.input_key;
    result.uploads = remote->offer(storage, uploaded);
  };
  // An existing entry of the content key serves: only the pointers, then the upload.
  const auto finish_served = [&] {
    finish_hit(result.content_key, served_outcome());
    upload(result.outcome);
    return result;
  };
  const std::optional<std::string> known_key = backend->content_key(staged);
  if (known_key && entry_serves(*known_key)) return finish_served();

  check_cancel();
  if (context.abi_embedded && recipe.builds_plugin()) write_embedded_abi(context.abi_dir);
  Produced produced = backend->compile(staged, known_key.value_or(""),
                                       [&](const std::string &content_key) { return !entry_serves(content_key); });
  if (produced.settled_on_existing) return finish_served();
  check_cancel();
  result.units = produced.units;

  // Record and publish.
  ArtifactIdentity artifact_identity;
  artifact_identity.key_schema = kKeySchema;
  artifact_identity.artifact_schema = kArtifactSchema;
  artifact_identity.abi_version = produced.abi_version;
  artifact_identity.archs = result.archs;
  if (produced.kind == kKindImages) {  // the archs the images offer (a fatbin repeats them)
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
  artifact_identity.models = produced.models;
  for (const auto &[field, value] : identity.fields()) artifact_identity.provenance[field] = value;
  for (const auto &[field, value] : records) artifact_identity.provenance[field] = value;
  for (const auto &[field, value] : produced.provenance) artifact_identity.provenance[field] = value;
  artifact_identity.provenance["input_key"] = result.input_key;
  artifact_identity.provenance["recipe"] = recipe.file;
  store::EntryMeta meta{result.content_key, produced.kind, produced.file, produced.bytes_digest, produced.size,
                        store::utc_now_iso8601(), produced.images, produced.kernels};
  append_log(build_log, "built in " + std::to_string(seconds_since(start)) + " s\n");
  staging.write_records(meta, artifact::identity_file_text(artifact_identity));
  store::Publication published = publication;
  published.content_key = result.content_key;
  // Forced: the fresh output takes the name even where the stored one is valid (a toolchain that
  // is not reproducible for these inputs wrote other bytes; the store says so at info level).
  const bool fresh = storage.commit(std::move(staging), published, log,
                                    options.force ? store::ExistingEntry::replace : store::ExistingEntry::keep);
  finish(result.content_key, fresh ? BuildResult::Outcome::built : BuildResult::Outcome::reused);
  upload(result.outcome);
  if (log) {
    log(LogLevel::info, "built " + recipe.consumer + "/" + recipe.name + " as " + result.content_key + " in " +
                            std::to_string(result.seconds) + " s");
  }
  return result;
}

}  // namespace kiln::builder
