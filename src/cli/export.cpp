// kiln export: chosen artifacts of a consumer into one (signed) bundle file.
#include <memory>

#include <kiln/bundle.hpp>
#include <kiln/json.hpp>

#include "verbs.hpp"

namespace kiln::cli {
namespace {

int run_export(const Flags &flags, const ExportRequest &request) {
  const Runtime runtime = make_runtime(flags);
  const ExportReport report = runtime.export_bundle(request);
  std::string text = "exported " + std::to_string(report.entries.size()) + " artifact(s) to " + report.bundle + "\n";
  for (const auto &entry : report.entries) {
    text += "  " + entry.consumer + "/" + entry.name + "  " + entry.content_key + "\n";
  }
  text += "  release " + std::to_string(report.release_version) + ", expires " + report.expires + "\n";
  text += "  " + std::to_string(report.bundle_bytes) + " bytes (" + std::to_string(report.content_bytes) +
          " uncompressed), " + (report.signed_by.empty() ? "unsigned" : "signed by " + report.signed_by) + "\n";
  if (report.key_list_generation != 0)
    text += "  carries key list generation " + std::to_string(report.key_list_generation) + "\n";
  emit(flags, kiln::to_json(report), text);
  return 0;
}

}  // namespace

Verb add_export(CLI::App &app, const Flags &flags) {
  auto request = std::make_shared<ExportRequest>();
  CLI::App *command = app.add_subcommand("export", "write artifacts of a consumer into one bundle file");
  command->add_option("--consumer", request->consumer, "consumer namespace")->required();
  command->add_option("--name", request->names, "artifact name (repeat; default: every artifact of the consumer)");
  command->add_option("-o,--output", request->output, "bundle file to write")->required();
  command->add_option("--sign", request->signing_key, "secret key (PATH.key of kiln keygen) to sign the bundle with");
  command->add_option("--release", request->release_version,
                      "release version of every name carried (a store refuses a lower one from the same signer); "
                      "default: the time in seconds since 1970");
  command->add_option("--expires", request->expires,
                      "when the bundle expires: a duration (90d, 12h, 30m, 3600s) or a UTC time 2027-01-31T23:59:59Z; "
                      "default: a year");
  command->add_option("--key-list", request->key_list,
                      "key list (kiln key) to carry: a store pinning its root takes it when newer and judges the "
                      "signer by it");
  return {command, [&flags, request] { return run_export(flags, *request); }};
}

}  // namespace kiln::cli
