// libkiln-remote.so's entry points: the backends behind a C-linkage factory that libkiln looks
// up with dlsym (store/remote/backend_module.hpp). Only these two symbols are exported; the
// module is built with kiln, from the same sources and headers, and is refused by any other
// kiln version.
#include "store/remote/backend_module.hpp"

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

namespace kiln::store::remote {
namespace {

std::string module_scheme(const std::string &url) {
  const auto colon = url.find("://");
  std::string scheme = colon == std::string::npos ? "" : url.substr(0, colon);
  for (auto &c : scheme) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return scheme;
}

}  // namespace
}  // namespace kiln::store::remote

extern "C" __attribute__((visibility("default"))) const char *kiln_remote_module_version() { return kiln::kVersion; }

// The caller owns the backend (deleted through its virtual destructor, in this module, which is
// never unloaded). Throws UsageError for a URL no backend takes.
extern "C" __attribute__((visibility("default"))) kiln::store::remote::Backend *kiln_remote_new_backend(
    const kiln::store::remote::Endpoint &endpoint) {
  using namespace kiln::store::remote;
  const std::string scheme = module_scheme(endpoint.url);
  if (scheme == "http" || scheme == "https") return make_http_backend(endpoint).release();
  if (scheme == "redis") return make_redis_backend(endpoint).release();
  throw kiln::UsageError("remote cache URL \"" + redacted_url(endpoint.url) + "\" is not supported: use http://host[:port]/prefix, "
                         "https://host[:port]/prefix (credentials as http://user:password@host/...) or "
                         "redis://[:password@]host[:port][/db]");
}
