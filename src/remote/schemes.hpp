// The URL schemes a remote cache can have, in one table: the configuration's checks and
// messages (remote/config.cpp) and the backends' module dispatch (backends/module_entry.cpp)
// read it, so a new kind of server is one row here and one file in backends/.
//
// Header-only: the backends' module is built from its own few sources.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::remote {

enum class BackendFamily { http, redis };

struct Scheme {
  std::string_view name;        // as in the URL, lower case ("https")
  BackendFamily family;         // the backend that serves it (backends/<family>_backend.cpp)
  std::string_view form;        // the URL's form, for messages
  std::string_view attributes;  // the scheme's own endpoint attributes, space-separated ("prefix")
  // Whether the server gives an atomic build lease (Backend's lease calls). A server without
  // one still serves and takes entries; machines missing the same entry then build it each.
  bool leases;
};

inline constexpr Scheme kSchemes[] = {
    {"http", BackendFamily::http, "http://host[:port]/prefix", "", true},
    {"https", BackendFamily::http, "https://host[:port]/prefix", "", true},
    {"redis", BackendFamily::redis, "redis://[:password@]host[:port][/db]", "prefix", true},
};

// The row of `url`'s scheme (compared without case, as URLs' schemes are); nullptr when it has
// none or an unknown one.
inline const Scheme *find_scheme(std::string_view url) {
  const auto colon = url.find("://");
  if (colon == std::string_view::npos) return nullptr;
  for (const Scheme &scheme : kSchemes) {
    if (scheme.name.size() != colon) continue;
    bool same = true;
    for (std::size_t i = 0; i < colon && same; ++i) {
      const char c = url[i] >= 'A' && url[i] <= 'Z' ? static_cast<char>(url[i] - 'A' + 'a') : url[i];
      same = c == scheme.name[i];
    }
    if (same) return &scheme;
  }
  return nullptr;
}

// "http://host[:port]/prefix, https://host[:port]/prefix or redis://[:password@]host[:port][/db]"
inline std::string scheme_forms() {
  std::string text;
  for (std::size_t i = 0; i < std::size(kSchemes); ++i) {
    if (i > 0) text += i + 1 == std::size(kSchemes) ? " or " : ", ";
    text += kSchemes[i].form;
  }
  return text;
}

// Whether `key` is one of the scheme's own attributes.
inline bool has_attribute(const Scheme &scheme, std::string_view key) {
  std::string_view rest = scheme.attributes;
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    if (rest.substr(0, space) == key) return true;
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  }
  return false;
}

}  // namespace kiln::remote
