// The CLI's own JSON: an error's form, and JSON text that never throws. Reports have their one
// public form (kiln/json.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <exception>
#include <string>

namespace kiln::cli {

nlohmann::json error_json(const std::exception &error);

// JSON text for stdout that never throws: bytes that are not UTF-8 (a Latin-1 store path, a
// compiler's output in an error) become U+FFFD. --json output is always valid JSON.
std::string json_text(const nlohmann::json &value);

}  // namespace kiln::cli
