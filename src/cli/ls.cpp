// kiln ls: every artifact, in store order.
#include <memory>

#include <kiln/json.hpp>
#include <kiln/store.hpp>

#include "report_json.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

int list(const Flags &flags, const std::string &consumer) {
  Runtime runtime = make_runtime(flags);
  nlohmann::json out = nlohmann::json::array();
  std::string text;
  for (const auto &item : runtime.list(consumer)) {
    out.push_back(kiln::to_json(item));
    if (!item.damaged.empty()) {
      text += item.consumer + "/  DAMAGED manifest in " + item.store_root + ": " + item.damaged + "\n";
      continue;
    }
    text += item.consumer + "/" + item.name + "  " + item.content_key + "  " + item.kind + "  " + item.store_root +
            (item.shadowed ? "  (shadowed)" : "") + "\n";
  }
  if (out.empty()) text = "no artifacts" + (consumer.empty() ? std::string() : " for consumer " + consumer) + "\n";
  emit(flags, out, text);
  return 0;
}

}  // namespace

Verb add_ls(CLI::App &app, const Flags &flags) {
  auto consumer = std::make_shared<std::string>();
  CLI::App *command = app.add_subcommand("ls", "list artifacts, in store order");
  command->add_option("consumer", *consumer, "only this consumer's artifacts");
  return {command, [&flags, consumer] { return list(flags, *consumer); }};
}

}  // namespace kiln::cli
