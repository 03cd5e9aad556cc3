#include "report_json.hpp"

#include "common.hpp"

#include <kiln/json.hpp>

namespace kiln::cli {

using nlohmann::json;

json to_json(const Resolution &r) {
  json out = {{"consumer", r.consumer}, {"name", r.name},           {"content_key", r.content_key},
              {"input_key", r.input_key}, {"kind", r.kind},         {"store", r.store_root},
              {"store_writable", r.store_writable}, {"entry", r.entry_dir}, {"file", r.file},
              {"digest", r.digest},       {"size", r.size},         {"updated", r.updated},
              {"identity", kiln::to_json(r.identity)}};
  if (r.kind == "images") {
    json images = json::array();
    for (const auto &image : r.images) images.push_back(to_json(image));
    json kernels = json::array();
    for (const auto &kernel : r.kernels) kernels.push_back({{"name", kernel.name}, {"lowered_name", kernel.lowered_name}});
    out["images"] = images;
    out["kernels"] = kernels;
  }
  return out;
}

json to_json(const ArtifactImage &image) {
  json out = {{"file", image.file}, {"kind", image.kind}, {"arch", image.arch.to_string()},
              {"digest", image.digest}, {"size", image.size}};
  if (image.kind == "fatbin") {
    json contains = json::array();
    for (const auto &arch : image.contains) contains.push_back(arch.to_string());
    out["contains"] = contains;
  }
  return out;
}

json to_json(const ImageChoice &choice) {
  json reasons = json::array();
  for (const auto &reason : choice.reasons) reasons.push_back(kiln::to_json(reason));
  return {{"ok", choice.ok}, {"arch", choice.arch ? json(choice.arch->to_string()) : json(nullptr)},
          {"how", choice.how}, {"reasons", reasons}};
}

json to_json(const KernelLoadTimings &t) {
  return {{"resolve_ms", t.resolve_ms}, {"check_ms", t.check_ms}, {"verify_ms", t.verify_ms},
          {"load_ms", t.load_ms},       {"kernels_ms", t.kernels_ms}, {"total_ms", t.total_ms()}};
}

json to_json(const KernelLoadReport &report) {
  json loads = json::array();
  for (const auto &load : report.loads) {
    loads.push_back({{"device", kiln::to_json(load.device)}, {"image", to_json(load.image)},
                     {"choice", to_json(load.choice)}});
  }
  json skipped = json::array();
  for (const auto &skip : report.skipped) {
    skipped.push_back({{"ordinal", skip.ordinal}, {"device", skip.device}, {"why", skip.why}});
  }
  return {{"resolution", to_json(report.resolution)}, {"loads", loads}, {"skipped", skipped},
          {"timings", to_json(report.timings)}};
}

json to_json(const LoadTimings &t) {
  return {{"resolve_ms", t.resolve_ms}, {"check_ms", t.check_ms}, {"verify_ms", t.verify_ms},
          {"dlopen_ms", t.dlopen_ms},   {"bind_ms", t.bind_ms},   {"total_ms", t.total_ms()}};
}

json to_json(const LoadReport &report) {
  json out = {{"resolution", to_json(report.resolution)},
              {"compatibility", kiln::to_json(report.compatibility)},
              {"abi_version", std::to_string(KILN_ABI_VERSION_MAJOR_OF(report.abi_version)) + "." +
                                  std::to_string(KILN_ABI_VERSION_MINOR_OF(report.abi_version))},
              {"plugin_id", report.plugin_id},
              {"plugin_version", report.plugin_version},
              {"interfaces", report.interfaces},
              {"timings", to_json(report.timings)}};
  out["device"] = report.device ? kiln::to_json(*report.device) : json(nullptr);
  return out;
}

json to_json(const ArtifactSummary &s) {
  json out = {{"consumer", s.consumer},       {"name", s.name},   {"content_key", s.content_key},
              {"kind", s.kind},               {"store", s.store_root}, {"store_writable", s.store_writable},
              {"shadowed", s.shadowed},       {"updated", s.updated}};
  if (!s.damaged.empty()) out["damaged"] = s.damaged;
  return out;
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

std::string json_text(const json &value) {
  return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

nlohmann::json to_json(const BuildResult &result) {
  json units = json::array(), uploads = json::array();
  for (const auto &unit : result.units) {
    units.push_back({{"name", unit.name}, {"cached", unit.cached}, {"seconds", unit.seconds}});
  }
  for (const auto &upload : result.uploads) uploads.push_back(kiln::to_json(upload));
  return {{"consumer", result.consumer}, {"name", result.name}, {"outcome", kiln::to_string(result.outcome)},
          {"input_key", result.input_key}, {"content_key", result.content_key}, {"entry", result.entry_dir},
          {"archs", arch_list(result.archs)}, {"units", units}, {"seconds", result.seconds},
          {"remote", result.remote.empty() ? json(nullptr) : json(result.remote)},
          {"signature_verified", !result.remote_signed_by.empty()},
          {"signed_by", result.remote_signed_by.empty() ? json(nullptr) : json(result.remote_signed_by)},
          {"uploads", uploads}};
}

}  // namespace kiln::cli
