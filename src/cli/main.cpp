// kiln — command line front end of the runtime. Every verb takes --json.
// Exit codes: 0 ok, 1 other, 2 usage/bad name, 3 not found, 4 incompatible, 5 plugin ABI,
// 6 integrity/corrupt, 7 build failed (README "Exit codes").
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <kiln/runtime.hpp>
#include <kiln/version.hpp>

#include "builder/process.hpp"
#include "cli/report_json.hpp"
#include "cli/toolchain.hpp"
#include "device/identity_json.hpp"

namespace {

using nlohmann::json;

struct Flags {
  bool json = false;
  int verbose = 0;
};

kiln::Runtime make_runtime(const Flags &flags) {
  kiln::RuntimeOptions options = kiln::RuntimeOptions::from_environment();
  const int verbose = flags.verbose;
  options.log = [verbose](kiln::LogLevel level, const std::string &message) {
    if (level >= kiln::LogLevel::warning || (verbose > 0 && level >= kiln::LogLevel::info) || verbose > 1) {
      std::fprintf(stderr, "kiln: %s: %s\n", kiln::to_string(level), message.c_str());
    }
  };
  return kiln::Runtime(std::move(options));
}

void emit(const Flags &flags, const json &value, const std::string &text) {
  if (flags.json) {
    std::cout << value.dump(2) << "\n";
  } else {
    std::cout << text;
  }
}

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

std::string fixed(double value, int digits = 3) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string arch_list(const std::vector<kiln::Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "" : ",") + arch.to_string();
  return text;
}

std::string device_line(const kiln::DeviceIdentity &d) {
  return "  [" + std::to_string(d.ordinal) + "] " + d.name + "  " + d.arch_name() + (d.integrated ? " (integrated)" : "") +
         (d.declared ? " (declared)" : "") + (d.uuid.empty() ? "" : "  " + d.uuid) +
         (d.sm_count > 0 ? "  SMs " + std::to_string(d.sm_count) : "") +
         (d.total_memory > 0 ? "  " + mib(d.total_memory) : "") + "  driver " + std::to_string(d.driver_version) + "\n";
}

int doctor(const Flags &flags) {
  kiln::Runtime runtime = make_runtime(flags);
  const kiln::DeviceReport &devices = runtime.devices();
  json stores = json::array();
  for (const auto &store : runtime.stores()) stores.push_back(kiln::cli::to_json(store));
  json out = {{"kiln_version", kiln::kVersion},
              {"abi_version", std::to_string(KILN_ABI_VERSION_MAJOR) + "." + std::to_string(KILN_ABI_VERSION_MINOR)},
              {"driver", kiln::device::to_json(devices)},
              {"stores", stores},
              {"toolchain", kiln::cli::describe_toolchain()}};
  std::string text = "kiln " + std::string(kiln::kVersion) + " (plugin ABI " + out["abi_version"].get<std::string>() + ")\n";
  text += "driver: " + std::string(kiln::to_string(devices.state)) + " - " + devices.detail + "\n";
  for (const auto &device : devices.devices) text += device_line(device);
  if (devices.declared) text += "declared device (KILN_DEVICE):\n" + device_line(*devices.declared);
  text += "stores (searched in order):\n";
  for (const auto &store : runtime.stores()) {
    text += "  " + store.root + (store.writable ? "  (writable cache" : "  (read-only layer") + ", from " + store.origin + ")\n";
  }
  const json &tools = out["toolchain"];
  text += "toolchain:\n  nvcc: " +
          (tools["nvcc"]["found"].get<bool>() ? tools["nvcc"]["path"].get<std::string>() + "  " +
                                                    tools["nvcc"].value("version", "")
                                              : std::string("not found (prepared artifacts still load)")) +
          "\n";
  for (const char *name : {"nvrtc", "nvjitlink", "nvfatbin"}) {
    const json &library = tools[name];
    text += std::string("  ") + name + ": " +
            (library["found"].get<bool>()
                 ? library["version"].get<std::string>() + "  " + library["path"].get<std::string>()
                 : "not found: " + library["detail"].get<std::string>()) +
            "\n";
  }
  emit(flags, out, text);
  return 0;
}

int publish(const Flags &flags, const std::string &consumer, const std::string &name, const std::string &file,
            const std::string &archs, int toolkit) {
  kiln::Runtime runtime = make_runtime(flags);
  kiln::PublishRequest request;
  request.consumer = consumer;
  request.name = name;
  request.artifact_file = file;
  if (archs != "none") request.archs = kiln::Arch::parse_list(archs);
  request.cuda_toolkit_version = toolkit;
  const kiln::PublishResult result = runtime.publish(request);
  const json out = {{"consumer", consumer},         {"name", name},          {"content_key", result.content_key},
                    {"entry", result.entry_dir},    {"file", result.file},   {"reused", result.reused}};
  emit(flags, out,
       "published " + consumer + "/" + name + "\n  content key " + result.content_key + (result.reused ? " (entry existed)" : "") +
           "\n  " + result.file + "\n");
  return 0;
}

std::string image_text(const kiln::ArtifactImage &image) {
  std::string text = image.file + " (" + image.kind + " ";
  if (image.kind == "fatbin") {
    text += "[" + arch_list(image.contains) + "]";
  } else {
    text += image.arch.to_string();
  }
  return text + ", " + std::to_string(image.size) + " bytes)";
}

std::string kernels_text(const kiln::Resolution &resolution) {
  std::string text;
  for (const auto &kernel : resolution.kernels) {
    text += std::string(text.empty() ? "  kernels  " : "           ") + kernel.name +
            (kernel.lowered_name != kernel.name ? "  (" + kernel.lowered_name + ")" : "") + "\n";
  }
  return text;
}

std::string kernel_load_text(const std::string &verb, const kiln::KernelLoadReport &report) {
  const kiln::Resolution &r = report.resolution;
  std::string text = verb + " " + r.consumer + "/" + r.name + " (device images, " + std::to_string(r.images.size()) +
                     " image(s), " + std::to_string(r.kernels.size()) + " kernel(s), " + r.content_key + ")\n";
  text += "  entry    " + r.entry_dir + "\n";
  text += kernels_text(r);
  for (const auto &load : report.loads) {
    text += "  device " + std::to_string(load.device.ordinal) + " " + load.device.name + " " + load.device.arch_name() +
            ": " + image_text(load.image) + ": " + load.choice.how + "\n";
  }
  for (const auto &skipped : report.skipped) text += "  skipped " + skipped.device + ": " + skipped.why + "\n";
  const kiln::KernelLoadTimings &t = report.timings;
  text += "  timings (ms): resolve " + fixed(t.resolve_ms) + ", check " + fixed(t.check_ms) + ", verify " +
          fixed(t.verify_ms) + ", load " + fixed(t.load_ms) + ", kernels " + fixed(t.kernels_ms) + ", total " +
          fixed(t.total_ms()) + "\n";
  return text;
}

int load_images(const Flags &flags, const std::string &consumer, const std::string &name, int device) {
  kiln::Runtime runtime = make_runtime(flags);
  kiln::DeviceLoadOptions options;
  if (device >= 0) {
    options.device_ordinal = device;
  } else {
    // Every device: those that cannot run it are listed, unless none can (then the error).
    options.skip_unusable = runtime.devices().effective().size() > 1;
  }
  kiln::KernelLoadReport report;
  const kiln::DeviceKernels kernels = runtime.load_kernels_all(consumer, name, options, &report);
  emit(flags, kiln::cli::to_json(report), kernel_load_text("loaded", report));
  return 0;
}

int load(const Flags &flags, const std::string &consumer, const std::string &name, int device) {
  std::string kind;
  {
    // Which kind of artifact, from a Runtime of its own: the timed load starts cold, as a fresh
    // process would (its resolve reads the manifest and entry again).
    kiln::Runtime probe = make_runtime(flags);
    kind = probe.resolve(consumer, name).kind;
  }
  if (kind == "images") return load_images(flags, consumer, name, device);
  kiln::Runtime runtime = make_runtime(flags);
  kiln::LoadOptions options;
  options.device = device;
  kiln::Module module = runtime.load(consumer, name, options);
  const kiln::LoadReport &report = module.report();
  std::string text = "loaded " + consumer + "/" + name + " (" + report.plugin_id + " " + report.plugin_version +
                     ", ABI " + std::to_string(KILN_ABI_VERSION_MAJOR_OF(report.abi_version)) + "." +
                     std::to_string(KILN_ABI_VERSION_MINOR_OF(report.abi_version)) + ")\n";
  text += "  file     " + report.resolution.file + "\n";
  text += "  device   " + (report.device ? report.device->name + " " + report.device->arch_name() : std::string("none")) +
          ": " + (report.compatibility.how.empty() ? std::string("-") : report.compatibility.how) + "\n";
  text += "  interfaces";
  for (const auto &id : report.interfaces) text += " " + id;
  text += "\n  timings (ms): resolve " + fixed(report.timings.resolve_ms) + ", check " + fixed(report.timings.check_ms) +
          ", verify " + fixed(report.timings.verify_ms) + ", dlopen " + fixed(report.timings.dlopen_ms) + ", bind " +
          fixed(report.timings.bind_ms) + ", total " + fixed(report.timings.total_ms()) + "\n";
  emit(flags, kiln::cli::to_json(report), text);
  return 0;
}

int list(const Flags &flags, const std::string &consumer) {
  kiln::Runtime runtime = make_runtime(flags);
  json out = json::array();
  std::string text;
  for (const auto &item : runtime.list(consumer)) {
    out.push_back(kiln::cli::to_json(item));
    text += item.consumer + "/" + item.name + "  " + item.content_key + "  " + item.kind + "  " + item.store_root +
            (item.shadowed ? "  (shadowed)" : "") + "\n";
  }
  if (out.empty()) text = "no artifacts" + (consumer.empty() ? std::string() : " for consumer " + consumer) + "\n";
  emit(flags, out, text);
  return 0;
}

int show(const Flags &flags, const std::string &consumer, const std::string &name) {
  kiln::Runtime runtime = make_runtime(flags);
  const kiln::Resolution resolution = runtime.resolve(consumer, name);
  json checks = json::array();
  std::string text = consumer + "/" + name + "\n  content key " + resolution.content_key + "\n  store " +
                     resolution.store_root + "\n  file " + resolution.file + " (" + std::to_string(resolution.size) +
                     " bytes, digest " + resolution.digest + ")\n  archs";
  for (const auto &arch : resolution.identity.archs) text += " " + arch.to_string();
  if (resolution.identity.archs.empty()) text += " none (host only)";
  text += "\n";
  std::vector<kiln::DeviceImage> offered;  // images artifacts: what choose_image needs
  if (resolution.kind == "images") {
    text += "  kind images, cuda_toolkit_version " + std::to_string(resolution.identity.cuda_toolkit_version) + "\n";
    for (const auto &image : resolution.images) {
      text += "  image    " + image_text(image) + " digest " + image.digest + "\n";
      kiln::DeviceImage each;
      each.kind = image.kind;
      each.arch = image.arch;
      each.contains = image.contains;
      offered.push_back(each);
    }
    text += kernels_text(resolution);
  }
  const auto devices = runtime.devices().effective();  // show: report live and declared alike
  if (devices.empty()) {
    const kiln::Compatibility host = runtime.check(resolution, nullptr);
    checks.push_back({{"device", nullptr}, {"compatibility", kiln::device::to_json(host)}});
    text += "  no device (" + runtime.devices().detail + ")\n";
  }
  for (const auto &device : devices) {
    kiln::Compatibility compatibility = runtime.check(resolution, &device);
    json check = {{"device", kiln::device::to_json(device)}};
    if (resolution.kind == "images" && compatibility.ok) {
      // The image file this device would run, and why (as Runtime::load_kernels chooses).
      const kiln::ImageChoice choice = kiln::choose_image(offered, device, resolution.identity.cuda_toolkit_version);
      compatibility.ok = choice.ok;
      compatibility.image = choice.arch;
      compatibility.how = choice.ok ? resolution.images[choice.index].file + ": " + choice.how : "";
      compatibility.reasons = choice.reasons;
      if (choice.ok) check["image"] = kiln::cli::to_json(resolution.images[choice.index]);
    }
    check["compatibility"] = kiln::device::to_json(compatibility);
    checks.push_back(check);
    text += "  device " + std::to_string(device.ordinal) + " " + device.name + " " + device.arch_name() + ": " +
            (compatibility.ok ? "loads - " + compatibility.how : std::string("refused"));
    for (const auto &reason : compatibility.reasons) text += "\n    " + reason.to_string();
    text += "\n";
  }
  emit(flags, {{"resolution", kiln::cli::to_json(resolution)}, {"checks", checks}}, text);
  return 0;
}

struct BuildArgs {
  std::string recipe;
  bool plan = false;
  bool force = false;
  unsigned jobs = 0;
  std::string archs;
};

std::string arch_text(const std::vector<kiln::Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "" : ",") + arch.to_string();
  return text;
}

json plan_json(const kiln::BuildPlan &plan) {
  json reasons = json::array();
  for (const auto &reason : plan.stale_reasons) {
    reasons.push_back({{"field", reason.field}, {"recorded", reason.recorded}, {"current", reason.current}});
  }
  return {{"consumer", plan.consumer}, {"name", plan.name}, {"input_key", plan.input_key},
          {"content_key", plan.content_key ? json(*plan.content_key) : json(nullptr)},
          {"state", plan.state}, {"stale_reasons", reasons}, {"archs", arch_text(plan.archs)},
          {"backend", plan.backend}, {"jit_toolchain", plan.jit_toolchain},
          {"nvcc", plan.nvcc}, {"nvcc_version", plan.nvcc_version}, {"host_compiler", plan.host_compiler},
          {"steps", plan.steps}};
}

json build_json(const kiln::BuildResult &result) {
  json units = json::array();
  for (const auto &unit : result.units) {
    units.push_back({{"name", unit.name}, {"cached", unit.cached}, {"seconds", unit.seconds}});
  }
  return {{"consumer", result.consumer}, {"name", result.name}, {"outcome", kiln::to_string(result.outcome)},
          {"input_key", result.input_key}, {"content_key", result.content_key}, {"entry", result.entry_dir},
          {"archs", arch_text(result.archs)}, {"units", units}, {"seconds", result.seconds}};
}

// Options shared by build and ensure: progress on a terminal, Ctrl-C kills nvcc children.
struct BuildSession {
  kiln::builder::CancelToken token;
  kiln::builder::CancelOnSignals signals{token};
  kiln::BuildOptions options;

  BuildSession(const Flags &flags, const BuildArgs &args) {
    options.force = args.force;
    options.jobs = args.jobs;
    if (!args.archs.empty()) options.archs = kiln::Arch::parse_list(args.archs);
    options.cancel = &token;
    if (!flags.json && ::isatty(STDERR_FILENO)) {
      options.progress = [](const kiln::BuildEvent &event) {
        using Kind = kiln::BuildEvent::Kind;
        switch (event.kind) {
          case Kind::generator_started: std::fprintf(stderr, "  generate %s ...\n", event.name.c_str()); break;
          case Kind::unit_started: break;
          case Kind::link_started: std::fprintf(stderr, "  link     %s ...\n", event.name.c_str()); break;
          case Kind::generator_finished:
          case Kind::link_finished:
            std::fprintf(stderr, "  done     %s (%.2f s)\n", event.name.c_str(), event.seconds);
            break;
          case Kind::unit_finished:
            std::fprintf(stderr, "  compile  %s %s (%.2f s)\n", event.name.c_str(), event.cached ? "cached" : "done",
                         event.seconds);
            break;
        }
      };
    }
  }
};

int build(const Flags &flags, const BuildArgs &args) {
  kiln::Runtime runtime = make_runtime(flags);
  const kiln::Recipe recipe = kiln::Recipe::load(args.recipe);
  BuildSession session(flags, args);
  if (args.plan) {
    const kiln::BuildPlan plan = runtime.plan(recipe, session.options);
    std::string text = recipe.consumer + "/" + recipe.name + ": " + plan.state + "\n  input key   " + plan.input_key +
                       "\n  content key " + (plan.content_key ? *plan.content_key : std::string("(unknown until built)")) +
                       "\n  archs       " + arch_text(plan.archs) +
                       (plan.backend == "nvcc" ? "\n  nvcc        " + plan.nvcc + " (" + plan.nvcc_version + ")\n"
                                               : "\n  jit         " + plan.jit_toolchain + "\n");
    for (const auto &reason : plan.stale_reasons) text += "  stale: " + reason.to_string() + "\n";
    for (const auto &step : plan.steps) text += "  would " + step + "\n";
    emit(flags, plan_json(plan), text);
    return 0;
  }
  const kiln::BuildResult result = runtime.build(recipe, session.options);
  std::string text = std::string(kiln::to_string(result.outcome)) + " " + recipe.consumer + "/" + recipe.name +
                     " in " + fixed(result.seconds, 2) + " s\n  content key " + result.content_key + "\n  input key   " +
                     result.input_key + "\n  " + result.entry_dir + "\n";
  emit(flags, build_json(result), text);
  return 0;
}

int ensure(const Flags &flags, const BuildArgs &args, int device) {
  kiln::Runtime runtime = make_runtime(flags);
  const kiln::Recipe recipe = kiln::Recipe::load(args.recipe);
  BuildSession session(flags, args);
  if (recipe.backend != "nvcc") {
    kiln::KernelLoadReport report;
    const kiln::KernelLibrary kernels = runtime.ensure_kernels(recipe, session.options, device, &report);
    emit(flags, kiln::cli::to_json(report), kernel_load_text("ensured", report));
    return 0;
  }
  kiln::LoadOptions load_options;
  load_options.device = device;
  kiln::Module module = runtime.ensure(recipe, session.options, load_options);
  const kiln::LoadReport &report = module.report();
  std::string text = "ensured " + recipe.consumer + "/" + recipe.name + " (" + report.resolution.content_key + ")\n  device   " +
                     (report.device ? report.device->name + " " + report.device->arch_name() : std::string("none")) + ": " +
                     (report.compatibility.how.empty() ? std::string("-") : report.compatibility.how) + "\n  interfaces";
  for (const auto &id : report.interfaces) text += " " + id;
  text += "\n";
  emit(flags, kiln::cli::to_json(report), text);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kiln: resolve, check, load and build GPU solver plugins"};
  app.require_subcommand(1);
  Flags flags;
  app.add_flag("--json", flags.json, "machine-readable output on stdout");
  app.add_flag("-v,--verbose", flags.verbose, "log more (repeat for debug)");
  app.set_version_flag("--version", std::string("kiln ") + kiln::kVersion);

  auto *doctor_cmd = app.add_subcommand("doctor", "driver, devices, declared device, stores and toolchain");

  std::string consumer, name, file, archs, device_arg;
  int toolkit = 0, device = -1;
  auto *publish_cmd = app.add_subcommand("publish", "put a prebuilt plugin into the writable store");
  publish_cmd->add_option("--consumer", consumer, "consumer namespace, e.g. hjcd-ik")->required();
  publish_cmd->add_option("--name", name, "artifact name")->required();
  publish_cmd->add_option("--artifact", file, "plugin shared object")->required()->check(CLI::ExistingFile);
  publish_cmd->add_option("--arch", archs, "archs its device code targets: sm_90[,sm_87,compute_90] or none")->required();
  publish_cmd->add_option("--cuda-toolkit", toolkit, "CUDA version that wrote its PTX (e.g. 12060); default: kiln's");

  auto *load_cmd = app.add_subcommand("load", "resolve, check, verify, dlopen and bind (device images: load and "
                                              "resolve every kernel on each device); time each step");
  load_cmd->add_option("consumer", consumer)->required();
  load_cmd->add_option("name", name)->required();
  load_cmd->add_option("--device", device, "device index to check against (default: the first; device images: "
                                           "every visible device)");

  auto *ls_cmd = app.add_subcommand("ls", "list artifacts, in store order");
  ls_cmd->add_option("consumer", consumer);

  auto *show_cmd = app.add_subcommand("show", "an artifact's entry, identity and fit on each device");
  show_cmd->add_option("consumer", consumer)->required();
  show_cmd->add_option("name", name)->required();

  BuildArgs build_args;
  auto *build_cmd = app.add_subcommand("build", "build a recipe on miss (exactly once across processes)");
  auto *ensure_cmd = app.add_subcommand("ensure", "build a recipe if needed, then load what was built");
  for (auto *sub : {build_cmd, ensure_cmd}) {
    sub->add_option("recipe", build_args.recipe, "recipe JSON file")->required()->check(CLI::ExistingFile);
    sub->add_flag("--force", build_args.force, "recompile every unit");
    sub->add_option("--jobs", build_args.jobs, "parallel compiles (default KILN_JOBS or cores, bounded by memory)");
    sub->add_option("--arch", build_args.archs, "override the recipe's archs: sm_90[,sm_87,compute_90]");
  }
  build_cmd->add_flag("--plan", build_args.plan, "report what a build would do, without side effects");
  ensure_cmd->add_option("--device", device, "device index to check against (default: the first)");

  for (auto *sub : {doctor_cmd, publish_cmd, load_cmd, ls_cmd, show_cmd, build_cmd, ensure_cmd}) {
    sub->add_flag("--json", flags.json, "machine-readable output on stdout");
    sub->add_flag("-v,--verbose", flags.verbose, "log more (repeat for debug)");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }

  try {
    if (*doctor_cmd) return doctor(flags);
    if (*publish_cmd) return publish(flags, consumer, name, file, archs, toolkit);
    if (*load_cmd) return load(flags, consumer, name, device);
    if (*ls_cmd) return list(flags, consumer);
    if (*show_cmd) return show(flags, consumer, name);
    if (*build_cmd) return build(flags, build_args);
    if (*ensure_cmd) return ensure(flags, build_args, device);
  } catch (const std::exception &error) {
    const json details = kiln::cli::error_json(error);
    if (flags.json) std::cout << json{{"error", details}}.dump(2) << "\n";
    std::fprintf(stderr, "kiln: error: %s\n", error.what());
    return details["exit_code"].get<int>();
  }
  return 1;
}
