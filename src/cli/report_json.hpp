// JSON forms of runtime results, shared by the CLI's --json output and its text output.
#pragma once

#include <nlohmann/json.hpp>

#include <kiln/runtime.hpp>

namespace kiln::cli {

nlohmann::json to_json(const Resolution &resolution);
nlohmann::json to_json(const LoadTimings &timings);
nlohmann::json to_json(const LoadReport &report);
nlohmann::json to_json(const ArtifactSummary &summary);
nlohmann::json to_json(const ArtifactImage &image);
nlohmann::json to_json(const ImageChoice &choice);
nlohmann::json to_json(const KernelLoadTimings &timings);
nlohmann::json to_json(const KernelLoadReport &report);
nlohmann::json to_json(const StoreInfo &store);
nlohmann::json to_json(const BuildResult &result);
nlohmann::json error_json(const std::exception &error);

// JSON text for stdout that never throws: bytes that are not UTF-8 (a Latin-1 store path, a
// compiler's output in an error) become U+FFFD. --json output is always valid JSON.
std::string json_text(const nlohmann::json &value);

}  // namespace kiln::cli
