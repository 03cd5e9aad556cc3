// kiln swap: ask the running processes that watch consumer/name (SwapOptions::watch) to swap to
// what it resolves to now, or to one content key, and say what each of them answered. No
// server: a generation counter and the watchers' records in <writable cache>/swap/generations.
#include <chrono>
#include <memory>

#include <kiln/swap.hpp>

#include "verbs.hpp"

namespace kiln::cli {
namespace {

struct SwapArgs {
  std::string consumer;
  std::string name;
  std::string to;
  int wait_ms = 2000;
};

nlohmann::json to_json(const SwapAcknowledgement &ack) {
  return {{"pid", ack.pid},         {"same_pid_namespace", ack.same_pid_namespace},
          {"generation", ack.generation}, {"outcome", ack.outcome},
          {"exit_code", ack.exit_code}, {"note", ack.note}};
}

nlohmann::json to_json(const std::vector<SwapAcknowledgement> &acks) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto &ack : acks) out.push_back(to_json(ack));
  return out;
}

// "swapped to KEY (generation 7)", "refused (exit code 5): ... (generation 7)"
std::string answer_text(const SwapAcknowledgement &ack) {
  std::string line;
  if (ack.outcome == "swapped") {
    line += "swapped to " + ack.note;
  } else if (ack.outcome == "unchanged") {
    line += "already serving " + ack.note;
  } else if (ack.outcome == "refused") {
    line += "refused (exit code " + std::to_string(ack.exit_code) + "): " + ack.note;
  } else {
    line += "watching";
  }
  return line + " (generation " + std::to_string(ack.generation) + ")";
}

std::string ack_line(const SwapAcknowledgement &ack) {
  return "  pid " + std::to_string(ack.pid) + ": " + answer_text(ack) + "\n";
}

int swap(const Flags &flags, const SwapArgs &args) {
  if (args.wait_ms < 0) throw UsageError("--wait " + std::to_string(args.wait_ms) + " is negative: give milliseconds, 0 or more");
  Runtime runtime = make_runtime(flags);
  std::optional<std::string> to;
  if (!args.to.empty()) to = args.to;
  SwapRequestResult result = request_swap(runtime, args.consumer, args.name, to);
  const bool all = wait_for_acknowledgements(runtime, result, std::chrono::milliseconds(args.wait_ms));

  int code = 0;  // the first refusal's exit code: a script sees a refused swap as failed
  for (const auto &ack : result.acknowledged) {
    if (ack.outcome == "refused" && code == 0) code = ack.exit_code != 0 ? ack.exit_code : 1;
  }
  if (!result.not_serving.empty() && code == 0) code = 1;  // --to KEY not served there: not done
  const nlohmann::json out = {{"consumer", args.consumer},
                              {"name", args.name},
                              {"content_key", to ? nlohmann::json(*to) : nlohmann::json(nullptr)},
                              {"generation", result.generation},
                              {"table", result.table_file},
                              {"all_acknowledged", all && result.not_serving.empty()},
                              {"acknowledged", to_json(result.acknowledged)},
                              {"not_serving", to_json(result.not_serving)},
                              {"pending", to_json(result.pending)},
                              {"other_pid_namespaces", to_json(result.foreign)}};
  std::string text = "requested a hot swap of " + args.consumer + "/" + args.name + " to " +
                     (to ? *to : std::string("what it resolves to")) + ": generation " +
                     std::to_string(result.generation) + " in " + result.table_file + "\n";
  for (const auto &ack : result.acknowledged) text += ack_line(ack);
  for (const auto &ack : result.not_serving) {
    text += "  pid " + std::to_string(ack.pid) + ": does not serve " + args.to +
            (ack.outcome == "watching" ? std::string(": it started watching after this request")
                                       : ": a later request replaced this one before it looked; it answered " +
                                             answer_text(ack)) +
            "\n";
  }
  for (const auto &ack : result.pending) {
    text += "  pid " + std::to_string(ack.pid) + ": no answer within " + std::to_string(args.wait_ms) +
            " ms (last handled generation " + std::to_string(ack.generation) + ")\n";
  }
  for (const auto &ack : result.foreign) {
    text += "  pid " + std::to_string(ack.pid) + " of another pid namespace (another container?): no answer yet, "
            "and whether it still runs cannot be told from here (last handled generation " +
            std::to_string(ack.generation) + ")\n";
  }
  if (result.acknowledged.empty() && result.not_serving.empty() && result.pending.empty() && result.foreign.empty()) {
    text += "  no running process watches " + args.consumer + "/" + args.name + " (SwapOptions::watch)\n";
  }
  emit(flags, out, text);
  return code;
}

}  // namespace

Verb add_swap(CLI::App &app, const Flags &flags) {
  auto args = std::make_shared<SwapArgs>();
  CLI::App *command = app.add_subcommand("swap", "ask running processes watching CONSUMER NAME to hot-swap it, and "
                                                 "say what each answered");
  command->add_option("consumer", args->consumer, "consumer namespace, e.g. kiln-ik")->required();
  command->add_option("name", args->name, "artifact name, e.g. iiwa14")->required();
  command->add_option("--to", args->to, "content key of an entry of the consumer to serve (default: what the name "
                                        "resolves to)");
  command->add_option("--wait", args->wait_ms, "milliseconds to wait for the watchers' answers (default 2000)");
  return {command, [&flags, args] { return swap(flags, *args); }};
}

}  // namespace kiln::cli
