// include/kiln/json.hpp: the JSON forms of the runtime's reports -- resolutions, loads, builds,
// listings, the toolchain -- written once, for the CLI's --json output and Python's dicts alike.
#include <kiln/json.hpp>

#include <kiln/kernels.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>
#include <kiln/toolchain.hpp>
#include <kiln/version.hpp>

namespace kiln {
namespace {

using nlohmann::json;

json arch_names(const std::vector<Arch> &archs) {
  json out = json::array();
  for (const auto &arch : archs) out.push_back(arch.to_string());
  return out;
}

json or_null(const std::string &value) { return value.empty() ? json(nullptr) : json(value); }

}  // namespace

json to_json(const ArtifactImage &image) {
  json out = {{"file", image.file}, {"kind", image.kind}, {"arch", image.arch.to_string()},
              {"digest", image.digest}, {"size", image.size}};
  if (image.kind == "fatbin") out["contains"] = arch_names(image.contains);
  return out;
}

json to_json(const Resolution &r) {
  json out = {{"consumer", r.consumer}, {"name", r.name}, {"content_key", r.content_key}, {"input_key", r.input_key},
              {"kind", r.kind}, {"store", r.store_root}, {"store_writable", r.store_writable}, {"entry", r.entry_dir},
              {"file", r.file}, {"digest", r.digest}, {"size", r.size}, {"updated", r.updated},
              {"identity", to_json(r.identity)}};
  if (r.kind == kKindImages) {
    json images = json::array(), kernels = json::array();
    for (const auto &image : r.images) images.push_back(to_json(image));
    for (const auto &kernel : r.kernels) kernels.push_back({{"name", kernel.name}, {"lowered_name", kernel.lowered_name}});
    out["images"] = images;
    out["kernels"] = kernels;
  }
  return out;
}

json to_json(const LoadTimings &t) {
  return {{"resolve_ms", t.resolve_ms}, {"check_ms", t.check_ms}, {"verify_ms", t.verify_ms},
          {"dlopen_ms", t.dlopen_ms},   {"bind_ms", t.bind_ms},   {"total_ms", t.total_ms()}};
}

json to_json(const LoadReport &report) {
  return {{"resolution", to_json(report.resolution)},
          {"compatibility", to_json(report.compatibility)},
          {"device", report.device ? to_json(*report.device) : json(nullptr)},
          {"abi_version", abi_version_text(report.abi_version)},
          {"plugin_id", report.plugin_id},
          {"plugin_version", report.plugin_version},
          {"interfaces", report.interfaces},
          {"timings", to_json(report.timings)}};
}

json to_json(const ImageChoice &choice) {
  json reasons = json::array();
  for (const auto &reason : choice.reasons) reasons.push_back(to_json(reason));
  return {{"ok", choice.ok}, {"arch", choice.arch ? json(choice.arch->to_string()) : json(nullptr)},
          {"how", choice.how}, {"reasons", reasons}};
}

json to_json(const KernelLoadTimings &t) {
  return {{"resolve_ms", t.resolve_ms}, {"check_ms", t.check_ms},     {"verify_ms", t.verify_ms},
          {"load_ms", t.load_ms},       {"kernels_ms", t.kernels_ms}, {"total_ms", t.total_ms()}};
}

json to_json(const KernelLoadReport &report) {
  json loads = json::array(), skipped = json::array();
  for (const auto &load : report.loads) {
    loads.push_back({{"device", to_json(load.device)}, {"image", to_json(load.image)}, {"choice", to_json(load.choice)}});
  }
  for (const auto &skip : report.skipped) {
    skipped.push_back({{"ordinal", skip.ordinal}, {"device", skip.device}, {"why", skip.why}});
  }
  return {{"resolution", to_json(report.resolution)}, {"loads", loads}, {"skipped", skipped},
          {"timings", to_json(report.timings)}};
}

json to_json(const ArtifactSummary &s) {
  json out = {{"consumer", s.consumer}, {"name", s.name}, {"content_key", s.content_key}, {"kind", s.kind},
              {"store", s.store_root}, {"store_writable", s.store_writable}, {"shadowed", s.shadowed},
              {"updated", s.updated}};
  if (!s.damaged.empty()) out["damaged"] = s.damaged;
  return out;
}

json to_json(const StoreInfo &s) { return {{"root", s.root}, {"writable", s.writable}, {"origin", s.origin}}; }

json to_json(const BuildPlan &plan) {
  json reasons = json::array();
  for (const auto &reason : plan.stale_reasons) reasons.push_back(to_json(reason));
  return {{"consumer", plan.consumer}, {"name", plan.name}, {"input_key", plan.input_key},
          {"content_key", plan.content_key ? json(*plan.content_key) : json(nullptr)},
          {"state", plan.state}, {"source", plan.source}, {"stale_reasons", reasons}, {"archs", arch_names(plan.archs)},
          {"backend", plan.backend}, {"jit_toolchain", plan.jit_toolchain},
          {"nvcc", plan.nvcc}, {"nvcc_version", plan.nvcc_version}, {"host_compiler", plan.host_compiler},
          {"cmake", plan.cmake}, {"cmake_version", plan.cmake_version},
          {"steps", plan.steps}, {"units", plan.units}, {"units_cached", plan.units_cached}};
}

json to_json(const BuildResult &result) {
  json units = json::array(), uploads = json::array();
  for (const auto &unit : result.units) {
    units.push_back({{"name", unit.name}, {"cached", unit.cached}, {"seconds", unit.seconds}});
  }
  for (const auto &upload : result.uploads) uploads.push_back(to_json(upload));
  return {{"consumer", result.consumer}, {"name", result.name}, {"outcome", to_string(result.outcome)},
          {"input_key", result.input_key}, {"content_key", result.content_key}, {"entry", result.entry_dir},
          {"archs", arch_names(result.archs)}, {"units", units}, {"seconds", result.seconds},
          {"remote", or_null(result.remote)}, {"signature_verified", !result.remote_signed_by.empty()},
          {"signed_by", or_null(result.remote_signed_by)}, {"uploads", uploads}, {"layer", or_null(result.layer)}};
}

json to_json(const PublishResult &result) {
  return {{"content_key", result.content_key}, {"entry", result.entry_dir}, {"file", result.file},
          {"reused", result.reused}};
}

json to_json(const ToolStatus &tool) {
  return {{"found", tool.found},     {"path", tool.path},         {"version", tool.version},
          {"release", tool.release}, {"searched", tool.searched}, {"detail", tool.detail}};
}

json to_json(const ToolchainReport &toolchain) {
  return {{"nvcc", to_json(toolchain.nvcc)},   {"host_compiler", to_json(toolchain.host_compiler)},
          {"cmake", to_json(toolchain.cmake)}, {"nvrtc", to_json(toolchain.nvrtc)},
          {"nvjitlink", to_json(toolchain.nvjitlink)}, {"nvfatbin", to_json(toolchain.nvfatbin)},
          {"nvrtc_archs", toolchain.nvrtc_archs}, {"jit_identity", toolchain.jit_identity}};
}

}  // namespace kiln
