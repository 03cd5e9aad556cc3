// JSON text for everything kiln writes (store files) or prints (--json).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kiln::support {

// Bytes that are not UTF-8 (a Latin-1 store or recipe directory in a path, a compiler's output)
// become U+FFFD instead of making dump() throw. Such values are informative only (provenance,
// paths shown to people, messages): keys hash the raw bytes as length-prefixed fields, never
// this text, so two paths that differ only in such bytes still key differently.
inline std::string dump_json(const nlohmann::json &value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kiln::support
