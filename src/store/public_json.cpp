// include/kiln/json.hpp: the JSON forms of the store maintenance reports (kiln/verify.hpp,
// kiln/gc.hpp), as `kiln verify --json`, `kiln gc --json` and the Python binding give them.
#include <kiln/json.hpp>

namespace kiln {

using nlohmann::json;

json to_json(const VerifyReport &report) {
  json findings = json::array();
  for (const auto &finding : report.findings) findings.push_back(to_json(finding));
  return {{"stores", report.stores},   {"consumers", report.consumers},
          {"entries", report.entries}, {"files", report.files},
          {"bytes", report.bytes},     {"seconds", report.seconds},
          {"findings", findings},      {"damage_left", report.damage_left},
          {"repaired", report.repaired}, {"clean", report.clean()},
          {"damage", report.damage},   {"stale", report.stale},
          {"info", report.info}};
}

json to_json(const StoreFinding &finding) {
  return {{"kind", finding.kind},         {"severity", finding.severity}, {"store", finding.store},
          {"consumer", finding.consumer}, {"path", finding.path},         {"detail", finding.detail},
          {"repair", finding.repair},     {"repaired", finding.repaired}};
}

json to_json(const GcReport &report) {
  json items = json::array();
  for (const auto &item : report.items) items.push_back(to_json(item));
  return {{"cache", report.cache},
          {"bytes_before", report.bytes_before},
          {"bytes_after", report.bytes_after},
          {"entries_seen", report.entries_seen},
          {"objects_seen", report.objects_seen},
          {"entries_evicted", report.entries_evicted},
          {"objects_evicted", report.objects_evicted},
          {"seconds", report.seconds},
          {"items", items}};
}

json to_json(const GcItem &item) {
  return {{"kind", item.kind},       {"consumer", item.consumer}, {"path", item.path},
          {"content_key", item.content_key}, {"bytes", item.bytes}, {"last_used", item.last_used},
          {"outcome", item.outcome}};
}

}  // namespace kiln
