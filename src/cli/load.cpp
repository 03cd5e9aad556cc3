// kiln load: resolve, check, verify, dlopen and bind a plugin (device images: load and resolve
// every kernel on each device), timing each step.
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include <kiln/dynamics.hpp>
#include <kiln/json.hpp>
#include <kiln/kernels.hpp>
#include <kiln/version.hpp>

#include "report_json.hpp"
#include "robot_tool.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

struct LoadArgs {
  std::string consumer;
  std::string name;
  int device = -1;
  std::string model_urdf, base, tip;  // --model URDF --base --tip: the robot the plugin must fit
  std::vector<double> gravity;        // --gravity X Y Z: with --model, the model with dynamics under it
  std::string dynamics_probe;         // --dynamics-probe FILE: the plugin's rnea against these torques
  std::string model_fingerprint;      // --model-fingerprint: the same, as kiln-urdf-fk --check printed it
};

// The robot model the plugin must have been generated from: the URDF's, through kiln-urdf-fk
// (its text too, so that a refusal names the first differing link or joint), or a fingerprint.
ModelRequirement required_model(const LoadArgs &args) {
  ModelRequirement model;
  if (!args.model_fingerprint.empty()) {
    if (!args.model_urdf.empty()) {
      throw UsageError("--model and --model-fingerprint both name the robot: pass one of them");
    }
    model.fingerprint = args.model_fingerprint;
    return model;
  }
  if (args.model_urdf.empty()) {
    if (!args.base.empty() || !args.tip.empty() || !args.gravity.empty()) {
      throw UsageError("--base, --tip and --gravity go with --model URDF");
    }
    return model;
  }
  if (args.base.empty() || args.tip.empty()) {
    throw UsageError("--model " + args.model_urdf + " needs the chain the plugin was generated for: --base LINK --tip LINK");
  }
  // A plugin with dynamics (TrajOpt) was generated from the model under its gravity: kiln-urdf-fk
  // checks the URDF as such a build would and prints that model.
  std::vector<std::string> options = {"--model-text"};
  if (!args.gravity.empty()) {
    options.insert(options.end(), {"--dynamics-check", "--gravity"});
    for (const double g : args.gravity) {
      if (!std::isfinite(g)) throw UsageError("--gravity takes three finite numbers (m/s^2, in the chain's base frame)");
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", g);  // the same double on the generator's side
      options.emplace_back(text);
    }
  }
  const ChainCheck check =
      check_chain(find_data_dir(), args.model_urdf, args.base, args.tip, options, "--model " + args.model_urdf);
  model.fingerprint = check.fingerprint;
  model.text = check.model_text;
  return model;
}

int load_images(const Flags &flags, const LoadArgs &args) {
  Runtime runtime = make_runtime(flags);
  DeviceLoadOptions options;
  if (args.device >= 0) {
    options.device_ordinal = args.device;
  } else {
    // Every device: those that cannot run it are listed, unless none can (then the error).
    options.skip_unusable = runtime.devices().effective().size() > 1;
  }
  KernelLoadReport report;
  const DeviceKernels kernels = runtime.load_kernels_all(args.consumer, args.name, options, &report);
  emit(flags, kiln::to_json(report), kernel_load_text("loaded", report));
  return 0;
}

int load(const Flags &flags, const LoadArgs &args) {
  const ModelRequirement model = required_model(args);  // a bad --model is refused before anything loads
  std::string kind;
  {
    // Which kind of artifact, from a Runtime of its own: the timed load starts cold, as a fresh
    // process would (its resolve reads the manifest and entry again).
    Runtime probe = make_runtime(flags);
    kind = probe.resolve(args.consumer, args.name).kind;
  }
  if (kind == kKindImages) {
    if (!model.fingerprint.empty()) {
      throw UsageError(args.consumer + "/" + args.name + " holds device images, which record no robot model: "
                       "--model and --model-fingerprint apply to plugins");
    }
    return load_images(flags, args);
  }
  // Read first: a bad probe file is refused before anything loads.
  const std::optional<DynamicsProbe> probe =
      args.dynamics_probe.empty() ? std::nullopt : std::optional<DynamicsProbe>(read_dynamics_probe(args.dynamics_probe));
  Runtime runtime = make_runtime(flags);
  LoadOptions options;
  options.device = args.device;
  options.model = model;
  Module module = runtime.load(args.consumer, args.name, options);
  const LoadReport &report = module.report();
  std::optional<DynamicsProbeReport> probed;
  if (probe) {
    const Instance instance = module.create_instance();  // on the host: never activated
    probed = probe_dynamics(module, instance, probe->states, probe->options);
  }
  std::string text = "loaded " + args.consumer + "/" + args.name + " (" + report.plugin_id + " " + report.plugin_version +
                     ", ABI " + abi_version_text(report.abi_version) + ")\n";
  text += "  file     " + report.resolution.file + "\n";
  text += "  device   " + (report.device ? report.device->name + " " + report.device->arch_name() : std::string("none")) +
          ": " + (report.compatibility.how.empty() ? std::string("-") : report.compatibility.how) + "\n";
  for (const auto &robot : report.resolution.identity.models) {
    text += "  model    " + robot.fingerprint + " (" + robot.chain + ")" +
            (robot.fingerprint == model.fingerprint ? ": the required one" : "") + "\n";
  }
  text += "  interfaces";
  for (const auto &id : report.interfaces) text += " " + id;
  text += "\n  timings (ms): resolve " + fixed(report.timings.resolve_ms) + ", check " + fixed(report.timings.check_ms) +
          ", verify " + fixed(report.timings.verify_ms) + ", dlopen " + fixed(report.timings.dlopen_ms) + ", bind " +
          fixed(report.timings.bind_ms) + ", total " + fixed(report.timings.total_ms()) + "\n";
  nlohmann::json out = kiln::to_json(report);
  if (probed) {
    text += "  dynamics " + std::to_string(probed->states) + " states agree with " + args.dynamics_probe +
            ": worst difference " + fixed(probed->worst_difference, 9) + " at state " +
            std::to_string(probed->worst_state) + ", joint " + probed->worst_joint + "\n";
    out["dynamics_probe"] = {{"file", args.dynamics_probe},
                             {"states", probed->states},
                             {"worst_difference", probed->worst_difference},
                             {"worst_state", probed->worst_state},
                             {"worst_joint", probed->worst_joint}};
  }
  emit(flags, out, text);
  return 0;
}

}  // namespace

Verb add_load(CLI::App &app, const Flags &flags) {
  auto args = std::make_shared<LoadArgs>();
  CLI::App *command = app.add_subcommand("load", "resolve, check, verify, dlopen and bind (device images: load and "
                                                 "resolve every kernel on each device); time each step");
  command->add_option("consumer", args->consumer, "consumer namespace, e.g. kiln-ik")->required();
  command->add_option("name", args->name, "artifact name, e.g. iiwa14")->required();
  command->add_option("--device", args->device, "device index to check against (default: the first; device images: "
                                                "every visible device)");
  command->add_option("--model", args->model_urdf, "refuse (exit 4) a plugin not generated from this URDF's chain "
                                                   "(with --base and --tip); the refusal names the first differing "
                                                   "link or joint");
  command->add_option("--base", args->base, "with --model: the chain's base link");
  command->add_option("--tip", args->tip, "with --model: the chain's tip link");
  command->add_option("--gravity", args->gravity,
                      "with --model: the plugin has dynamics (TrajOpt) generated under this gravity, m/s^2 in the "
                      "base frame (kiln-urdf-fk's default: 0 0 -9.81); its model must match under it too")
      ->expected(3);
  command->add_option("--dynamics-probe", args->dynamics_probe,
                      "refuse (exit 4) a plugin whose kiln.robotmodel/1 rnea disagrees with the torques in this JSON "
                      "file ({\"states\": [{\"q\", \"qd\", \"qdd\", \"tau\"}, ...]}: the host's own model)");
  command->add_option("--model-fingerprint", args->model_fingerprint,
                      "refuse (exit 4) a plugin not generated from this model (xxh128:..., as kiln-urdf-fk --check "
                      "prints it)");
  return {command, [&flags, args] { return load(flags, *args); }};
}

}  // namespace kiln::cli
