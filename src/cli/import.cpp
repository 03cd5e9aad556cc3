// kiln import: a bundle's artifacts into the writable cache or a directory (--into).
#include <memory>

#include <kiln/bundle.hpp>
#include <kiln/json.hpp>

#include "verbs.hpp"

namespace kiln::cli {
namespace {

int run_import(const Flags &flags, const ImportRequest &request) {
  Runtime runtime = make_runtime(flags);
  const ImportReport report = runtime.import_bundle(request);
  std::string text = "imported " + report.bundle + " into " + report.store_root + "\n";
  for (const auto &entry : report.entries) {
    text += "  " + entry.consumer + "/" + entry.name + "  " + entry.content_key + "  " + entry.status +
            (entry.release_version != 0 ? "  release " + std::to_string(entry.release_version) : std::string()) + "\n";
  }
  if (report.key_list_generation != 0) {
    text += "  now follows key list generation " + std::to_string(report.key_list_generation) +
            " (carried by the bundle)\n";
  }
  if (report.expired) text += "  EXPIRED at " + report.expires + " (--allow-expired)\n";
  text += "  " + std::to_string(report.verified_bytes) + " bytes verified, " +
          (report.signature_verified ? "signed by " + report.signed_by : std::string("signature not checked")) + "\n";
  emit(flags, kiln::to_json(report), text);
  return 0;
}

}  // namespace

Verb add_import(CLI::App &app, const Flags &flags) {
  auto request = std::make_shared<ImportRequest>();
  CLI::App *command = app.add_subcommand("import", "bring a bundle's artifacts in, verified, all or nothing");
  command->add_option("bundle", request->bundle, "bundle file (kiln export)")->required();
  command->add_option("--into", request->into,
                      "store directory to import into (created if absent; e.g. a read-only vendor layer); default: "
                      "the writable cache");
  command->add_option("--trust", request->trusted_keys, "public key (PATH.pub) whose signature is accepted (repeat)");
  command->add_flag("--allow-unsigned", request->allow_unsigned,
                    "with no --trust key: import a bundle without checking a signature (only from a source you trust)");
  command->add_flag("--allow-downgrade", request->allow_downgrade,
                    "roll a name back on purpose: accept a release older than the one this store accepted from the "
                    "same signer (or a bundle created before the one that set the name)");
  command->add_flag("--allow-expired", request->allow_expired,
                    "import a bundle past its expiry (a robot whose clock is known to be wrong)");
  return {command, [&flags, request] { return run_import(flags, *request); }};
}

}  // namespace kiln::cli
