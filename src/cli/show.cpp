// kiln show: an artifact's entry, identity and fit on each device.
#include <memory>

#include <kiln/json.hpp>
#include <kiln/kernels.hpp>

#include "report_json.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

using nlohmann::json;

struct ShowArgs {
  std::string consumer, name;
  bool model_text = false;
};

int show(const Flags &flags, const ShowArgs &args) {
  const std::string &consumer = args.consumer, &name = args.name;
  Runtime runtime = make_runtime(flags);
  const Resolution resolution = runtime.resolve(consumer, name);
  json checks = json::array();
  std::string text = consumer + "/" + name + "\n  content key " + resolution.content_key + "\n  store " +
                     resolution.store_root + "\n  file " + resolution.file + " (" + std::to_string(resolution.size) +
                     " bytes, digest " + resolution.digest + ")\n  archs";
  for (const auto &arch : resolution.identity.archs) text += " " + arch.to_string();
  if (resolution.identity.archs.empty()) text += " none (host only)";
  text += "\n";
  for (const auto &model : resolution.identity.models) text += "  model " + model.fingerprint + " (" + model.chain + ")\n";
  json model_texts = nullptr;
  if (args.model_text) {  // what the fingerprints digest, from the file itself: for comparing two models
    model_texts = json::array();
    for (const std::string &model : robot_model_texts(resolution.file)) {
      model_texts.push_back(model);
      text += model;
    }
  }
  std::vector<DeviceImage> offered;  // images artifacts: what choose_image needs
  if (resolution.kind == kKindImages) {
    text += "  kind images, cuda_toolkit_version " + std::to_string(resolution.identity.cuda_toolkit_version) + "\n";
    for (const auto &image : resolution.images) {
      text += "  image    " + image_text(image) + " digest " + image.digest + "\n";
      DeviceImage each;
      each.kind = image.kind;
      each.arch = image.arch;
      each.contains = image.contains;
      offered.push_back(each);
    }
    text += kernels_text(resolution);
  }
  const auto devices = runtime.devices().effective();  // show: report live and declared alike
  if (devices.empty()) {
    const Compatibility host = runtime.check(resolution, nullptr);
    checks.push_back({{"device", nullptr}, {"compatibility", kiln::to_json(host)}});
    text += "  no device (" + runtime.devices().detail + ")\n";
  }
  for (const auto &device : devices) {
    Compatibility compatibility = runtime.check(resolution, &device);
    json check = {{"device", kiln::to_json(device)}};
    if (resolution.kind == kKindImages && compatibility.ok) {
      // The image file this device would run, and why (as Runtime::load_kernels chooses).
      const ImageChoice choice = choose_image(offered, device, resolution.identity.cuda_toolkit_version);
      compatibility.ok = choice.ok;
      compatibility.image = choice.arch;
      compatibility.how = choice.ok ? resolution.images[choice.index].file + ": " + choice.how : "";
      compatibility.reasons = choice.reasons;
      if (choice.ok) check["image"] = kiln::to_json(resolution.images[choice.index]);
    }
    check["compatibility"] = kiln::to_json(compatibility);
    checks.push_back(check);
    text += "  device " + std::to_string(device.ordinal) + " " + device.name + " " + device.arch_name() + ": " +
            (compatibility.ok ? "loads - " + compatibility.how : std::string("refused"));
    for (const auto &reason : compatibility.reasons) text += "\n    " + reason.to_string();
    text += "\n";
  }
  json out = {{"resolution", kiln::to_json(resolution)}, {"checks", checks}};
  if (args.model_text) out["model_texts"] = model_texts;
  emit(flags, out, text);
  return 0;
}

}  // namespace

Verb add_show(CLI::App &app, const Flags &flags) {
  auto args = std::make_shared<ShowArgs>();
  CLI::App *command = app.add_subcommand("show", "an artifact's entry, identity and fit on each device");
  command->add_option("consumer", args->consumer, "consumer namespace, e.g. kiln-ik")->required();
  command->add_option("name", args->name, "artifact name, e.g. iiwa14")->required();
  command->add_flag("--model-text", args->model_text,
                    "also print the robot model text each fingerprint digests (compare it with kiln-urdf-fk --check "
                    "--model-text of a URDF)");
  return {command, [&flags, args] { return show(flags, *args); }};
}

}  // namespace kiln::cli
