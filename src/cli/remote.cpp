// kiln remote: the remote caches a build asks and uploads to (kiln/remote.hpp) -- status, push
// (entries of this machine to every read-write remote) and pull (what a build of a recipe
// would fetch, never compiling).
#include <memory>

#include <kiln/json.hpp>
#include <kiln/remote.hpp>

#include "build_session.hpp"
#include "report_json.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

using nlohmann::json;

int run_status(const Flags &flags) {
  const Runtime runtime = make_runtime(flags);
  const RemoteStatus status = runtime.remote_status();
  emit(flags, kiln::to_json(status), remote_status_text(status));
  bool any_down = false;
  for (const auto &remote : status.remotes) any_down = any_down || remote.state != "ok";
  return any_down ? 1 : 0;
}

struct PushArgs {
  std::string consumer;
  std::vector<std::string> names;
};

int run_push(const Flags &flags, const PushArgs &args) {
  const Runtime runtime = make_runtime(flags);
  const std::vector<RemoteTransfer> transfers = runtime.remote_push(args.consumer, args.names);
  json items = json::array();
  std::string text;
  bool failed = false;
  for (const auto &transfer : transfers) {
    items.push_back(kiln::to_json(transfer));
    failed = failed || transfer.status.rfind("failed", 0) == 0;
    text += transfer.consumer + "/" + transfer.name + " " + transfer.content_key + " -> " + transfer.remote + ": " +
            transfer.status + (transfer.bytes > 0 ? " (" + std::to_string(transfer.bytes) + " bytes)" : "") +
            (transfer.replaced.empty() ? "" : "\n  it replaced " + transfer.replaced) + "\n";
  }
  emit(flags, {{"transfers", items}}, text);
  return failed ? 1 : 0;  // a remote that failed is no error of kiln's, but a script must see it
}

}  // namespace

Verb add_remote(CLI::App &app, const Flags &flags) {
  CLI::App *command = app.add_subcommand("remote", "the remote caches shared across machines: status, push, pull");
  command->require_subcommand(1);
  CLI::App *status = command->add_subcommand("status", "the configuration, and whether each remote answers (exit 1 if one does not)");
  auto push_args = std::make_shared<PushArgs>();
  CLI::App *push = command->add_subcommand("push", "upload artifacts of this machine to every read-write remote");
  push->add_option("--consumer", push_args->consumer, "consumer namespace")->required();
  push->add_option("--name", push_args->names, "artifact name (repeat; default: every artifact of the consumer)");
  auto pull_args = std::make_shared<BuildArgs>();
  pull_args->remote_only = true;
  CLI::App *pull = command->add_subcommand("pull", "fetch what a build of the recipe would fetch; never compiles (exit 3 when no remote has it)");
  pull->add_option("recipe", pull_args->recipe, "recipe JSON file")->required();
  pull->add_option("--arch", pull_args->archs, "override the recipe's archs: sm_90[,sm_87,compute_90]");
  pull->add_flag("-q,--quiet", pull_args->quiet, "no progress on stderr");
  // --json and -v after the sub-verb reach `remote`'s own (main adds them to every verb).
  for (CLI::App *verb : {status, push, pull}) verb->fallthrough();
  return {command, [&flags, status, push, pull, push_args, pull_args] {
            if (*status) return run_status(flags);
            if (*push) return run_push(flags, *push_args);
            return run_build(flags, *pull_args);
          }};
}

}  // namespace kiln::cli
