// kiln load: resolve, check, verify, dlopen and bind a plugin (device images: load and resolve
// every kernel on each device), timing each step.
#include <memory>

#include <kiln/json.hpp>
#include <kiln/kernels.hpp>
#include <kiln/version.hpp>

#include "report_json.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

struct LoadArgs {
  std::string consumer;
  std::string name;
  int device = -1;
};

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
  std::string kind;
  {
    // Which kind of artifact, from a Runtime of its own: the timed load starts cold, as a fresh
    // process would (its resolve reads the manifest and entry again).
    Runtime probe = make_runtime(flags);
    kind = probe.resolve(args.consumer, args.name).kind;
  }
  if (kind == kKindImages) return load_images(flags, args);
  Runtime runtime = make_runtime(flags);
  LoadOptions options;
  options.device = args.device;
  Module module = runtime.load(args.consumer, args.name, options);
  const LoadReport &report = module.report();
  std::string text = "loaded " + args.consumer + "/" + args.name + " (" + report.plugin_id + " " + report.plugin_version +
                     ", ABI " + abi_version_text(report.abi_version) + ")\n";
  text += "  file     " + report.resolution.file + "\n";
  text += "  device   " + (report.device ? report.device->name + " " + report.device->arch_name() : std::string("none")) +
          ": " + (report.compatibility.how.empty() ? std::string("-") : report.compatibility.how) + "\n";
  text += "  interfaces";
  for (const auto &id : report.interfaces) text += " " + id;
  text += "\n  timings (ms): resolve " + fixed(report.timings.resolve_ms) + ", check " + fixed(report.timings.check_ms) +
          ", verify " + fixed(report.timings.verify_ms) + ", dlopen " + fixed(report.timings.dlopen_ms) + ", bind " +
          fixed(report.timings.bind_ms) + ", total " + fixed(report.timings.total_ms()) + "\n";
  emit(flags, kiln::to_json(report), text);
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
  return {command, [&flags, args] { return load(flags, *args); }};
}

}  // namespace kiln::cli
