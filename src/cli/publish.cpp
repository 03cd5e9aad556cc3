// kiln publish: put a prebuilt plugin into the writable store.
#include <memory>

#include <kiln/json.hpp>

#include "verbs.hpp"

namespace kiln::cli {
namespace {

struct PublishArgs {
  std::string consumer;
  std::string name;
  std::string file;
  std::string archs;
  int toolkit = 0;
};

int publish(const Flags &flags, const PublishArgs &args) {
  Runtime runtime = make_runtime(flags);
  PublishRequest request;
  request.consumer = args.consumer;
  request.name = args.name;
  request.artifact_file = args.file;
  request.set_archs(args.archs);
  request.cuda_toolkit_version = args.toolkit;
  const PublishResult result = runtime.publish(request);
  nlohmann::json out = {{"consumer", args.consumer}, {"name", args.name}};
  out.update(kiln::to_json(result));
  emit(flags, out,
       "published " + args.consumer + "/" + args.name + "\n  content key " + result.content_key +
           (result.reused ? " (entry existed)" : "") + "\n  " + result.file + "\n");
  return 0;
}

}  // namespace

Verb add_publish(CLI::App &app, const Flags &flags) {
  auto args = std::make_shared<PublishArgs>();
  CLI::App *command = app.add_subcommand("publish", "put a prebuilt plugin into the writable store");
  command->add_option("--consumer", args->consumer, "consumer namespace, e.g. hjcd-ik")->required();
  command->add_option("--name", args->name, "artifact name")->required();
  // Not CLI::ExistingFile: a missing file is "not found" (exit 3), said by publish.
  command->add_option("--artifact", args->file, "plugin shared object")->required();
  command->add_option("--arch", args->archs,
                      "archs its device code targets, each held by the file: sm_90[,sm_87,compute_90], or none "
                      "(host-only: a file without device code); default: the archs the file holds");
  command->add_option("--cuda-toolkit", args->toolkit, "CUDA version that wrote its PTX (e.g. 12060); default: kiln's");
  return {command, [&flags, args] { return publish(flags, *args); }};
}

}  // namespace kiln::cli
