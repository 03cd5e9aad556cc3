// kiln verify: check the stores (or one store directory) and, with --repair, repair them.
// Exit 0 when no damage is left, 6 (integrity) when some is (docs/cli.md "Exit codes").
#include <memory>

#include <kiln/json.hpp>
#include <kiln/verify.hpp>

#include "streamed_listing.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

struct VerifyArgs {
  std::string store;
  bool repair = false;
};

std::string finding_text(const StoreFinding &finding) {
  std::string text = finding.severity + "  " + finding.kind + "  " + finding.path + "\n    " + finding.detail + "\n";
  if (!finding.repair.empty()) text += "    repair: " + finding.repair + "\n";
  return text;
}

int verify(const Flags &flags, const VerifyArgs &args) {
  Runtime runtime = make_runtime(flags);
  StreamedListing out(flags, "findings");
  VerifyOptions options;
  options.store_dir = args.store;
  options.repair = args.repair;
  options.on_finding = [&out](const StoreFinding &finding) {
    out.item([&] { return kiln::to_json(finding); }, [&] { return finding_text(finding); });
  };
  VerifyReport report;
  try {
    report = runtime.verify(options);
  } catch (const std::exception &error) {
    return out.fail(error);
  }
  const double mb = static_cast<double>(report.bytes) / 1e6;
  const double mb_per_s = report.seconds > 0 ? mb / report.seconds : 0;
  const std::uint64_t left = report.unrepaired_damage();
  const std::string text =
      "checked " + std::to_string(report.stores.size()) + " store(s), " + std::to_string(report.consumers) +
      " consumer(s), " + std::to_string(report.entries) + " entries (" + std::to_string(report.files) + " files, " +
      fixed(mb, 1) + " MB) in " + fixed(report.seconds, 3) + " s (" + fixed(mb_per_s, 0) +
      " MB/s): " + std::to_string(report.damage) + " damage, " + std::to_string(report.stale) + " stale, " +
      std::to_string(report.info) + " info" + (args.repair ? ", " + std::to_string(report.repaired) + " repaired" : "") +
      (left > 0 ? "; damage left: " + std::to_string(left) + (args.repair ? "" : " (kiln verify --repair)") : "") + "\n";
  out.finish(kiln::to_json(report), text);
  return left > 0 ? static_cast<int>(ErrorKind::integrity) : 0;
}

}  // namespace

Verb add_verify(CLI::App &app, const Flags &flags) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App *command = app.add_subcommand(
      "verify", "check every store entry's digest, manifests, bykey pointers, permissions, leftovers and orphans");
  command->add_option("--store", args->store, "check this store directory only (e.g. a vendor layer being prepared)");
  command->add_flag("--repair", args->repair,
                    "move damaged entries aside, drop dangling records and pointers, sweep leftovers (writable stores)");
  return {command, [&flags, args] { return verify(flags, *args); }};
}

}  // namespace kiln::cli
