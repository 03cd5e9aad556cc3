// kiln gc: evict least-recently-used entries and object-cache files from the writable cache.
#include <memory>

#include <kiln/gc.hpp>
#include <kiln/json.hpp>

#include "streamed_listing.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

struct GcArgs {
  std::string max_size, older_than;
  bool include_named = false;
  bool dry_run = false;
};

int gc(const Flags &flags, const GcArgs &args) {
  Runtime runtime = make_runtime(flags);
  StreamedListing out(flags, "items");
  GcOptions options;
  if (!args.max_size.empty()) options.max_bytes = parse_size(args.max_size);
  if (!args.older_than.empty()) options.older_than = parse_age(args.older_than);
  options.include_named = args.include_named;
  options.dry_run = args.dry_run;
  options.on_item = [&out](const GcItem &item) {
    out.item([&] { return kiln::to_json(item); },
             [&] {
               return item.outcome + "  " + item.kind + "  " + item.path + "  (" + std::to_string(item.bytes) +
                      " bytes)\n";
             });
  };
  GcReport report;
  try {
    report = runtime.gc(options);
  } catch (const std::exception &error) {
    return out.fail(error);
  }
  const auto mb = [](std::uint64_t bytes) { return fixed(static_cast<double>(bytes) / 1e6, 1) + " MB"; };
  const std::string text =
      std::string(args.dry_run ? "would evict " : "evicted ") + std::to_string(report.entries_evicted) + " of " +
      std::to_string(report.entries_seen) + " entries and " + std::to_string(report.objects_evicted) + " of " +
      std::to_string(report.objects_seen) + " objects in " + report.cache + ": " + mb(report.bytes_before) + " -> " +
      mb(report.bytes_after) + " in " + fixed(report.seconds, 3) + " s\n";
  nlohmann::json summary = kiln::to_json(report);
  summary["dry_run"] = args.dry_run;
  out.finish(summary, text);
  return 0;
}

}  // namespace

Verb add_gc(CLI::App &app, const Flags &flags) {
  auto args = std::make_shared<GcArgs>();
  CLI::App *command = app.add_subcommand(
      "gc", "evict least-recently-used entries and object files from the writable cache (never one in use)");
  command->add_option("--max-size", args->max_size, "evict until entries and objects take at most SIZE (500M, 2G)");
  command->add_option("--older-than", args->older_than, "evict what was last used longer ago than AGE (30d, 12h)");
  command->add_flag("--include-named", args->include_named,
                    "also evict entries a manifest names (their records are dropped; a load then builds or fails)");
  command->add_flag("--dry-run", args->dry_run, "say what would be evicted, change nothing");
  return {command, [&flags, args] { return gc(flags, *args); }};
}

}  // namespace kiln::cli
