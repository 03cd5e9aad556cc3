#include "cli/report_json.hpp"

#include "device/identity_json.hpp"

namespace kiln::cli {

using nlohmann::json;

json to_json(const Resolution &r) {
  return {{"consumer", r.consumer}, {"name", r.name},           {"content_key", r.content_key},
          {"input_key", r.input_key}, {"kind", r.kind},         {"store", r.store_root},
          {"store_writable", r.store_writable}, {"entry", r.entry_dir}, {"file", r.file},
          {"digest", r.digest},       {"size", r.size},         {"updated", r.updated},
          {"identity", kiln::device::to_json(r.identity)}};
}

json to_json(const LoadTimings &t) {
  return {{"resolve_ms", t.resolve_ms}, {"check_ms", t.check_ms}, {"verify_ms", t.verify_ms},
          {"dlopen_ms", t.dlopen_ms},   {"bind_ms", t.bind_ms},   {"total_ms", t.total_ms()}};
}

json to_json(const LoadReport &report) {
  json out = {{"resolution", to_json(report.resolution)},
              {"compatibility", kiln::device::to_json(report.compatibility)},
              {"abi_version", std::to_string(KILN_ABI_VERSION_MAJOR_OF(report.abi_version)) + "." +
                                  std::to_string(KILN_ABI_VERSION_MINOR_OF(report.abi_version))},
              {"plugin_id", report.plugin_id},
              {"plugin_version", report.plugin_version},
              {"interfaces", report.interfaces},
              {"timings", to_json(report.timings)}};
  out["device"] = report.device ? kiln::device::to_json(*report.device) : json(nullptr);
  return out;
}

json to_json(const ArtifactSummary &s) {
  return {{"consumer", s.consumer},       {"name", s.name},   {"content_key", s.content_key},
          {"kind", s.kind},               {"store", s.store_root}, {"store_writable", s.store_writable},
          {"shadowed", s.shadowed},       {"updated", s.updated}};
}

json to_json(const StoreInfo &s) { return {{"root", s.root}, {"writable", s.writable}, {"origin", s.origin}}; }

json error_json(const std::exception &error) {
  json out = {{"message", error.what()}, {"kind", "other"}, {"exit_code", 1}};
  if (const auto *typed = dynamic_cast<const Error *>(&error)) {
    static const char *names[] = {"", "other", "usage", "not_found", "incompatible", "abi", "integrity", "build"};
    const int code = typed->exit_code();
    out["kind"] = (code >= 1 && code <= 7) ? names[code] : "other";
    out["exit_code"] = code;
  }
  if (const auto *incompatible = dynamic_cast<const IncompatibleError *>(&error)) {
    json reasons = json::array();
    for (const auto &reason : incompatible->reasons()) {
      reasons.push_back({{"field", reason.field}, {"recorded", reason.recorded}, {"current", reason.current},
                         {"note", reason.note}});
    }
    out["reasons"] = reasons;
  }
  if (const auto *build = dynamic_cast<const BuildError *>(&error)) out["log"] = build->log();
  return out;
}

}  // namespace kiln::cli
