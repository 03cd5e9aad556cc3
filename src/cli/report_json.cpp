#include "report_json.hpp"

#include "common.hpp"

#include <kiln/errors.hpp>

namespace kiln::cli {

using nlohmann::json;

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

}  // namespace kiln::cli
