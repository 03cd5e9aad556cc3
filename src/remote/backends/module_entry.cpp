// libkiln-remote.so's entry points: the backends behind a C-linkage factory that libkiln looks
// up with dlsym (remote/backend_module.hpp). Only these two symbols are exported; the
// module is built with kiln, from the same sources and headers, and is refused by any other
// kiln version.
#include "remote/backend_module.hpp"
#include "remote/schemes.hpp"

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

extern "C" __attribute__((visibility("default"))) const char *kiln_remote_module_version() { return kiln::kVersion; }

// The caller owns the backend (deleted through its virtual destructor, in this module, which is
// never unloaded). Throws UsageError for a URL no backend takes.
extern "C" __attribute__((visibility("default"))) kiln::remote::Backend *kiln_remote_new_backend(
    const kiln::remote::Endpoint &endpoint) {
  using namespace kiln::remote;
  if (const Scheme *scheme = find_scheme(endpoint.url)) {
    switch (scheme->family) {
      case BackendFamily::http: return make_http_backend(endpoint).release();
      case BackendFamily::redis: return make_redis_backend(endpoint).release();
    }
  }
  throw kiln::UsageError("remote cache URL \"" + redacted_url(endpoint.url) + "\" is not supported: use " + scheme_forms() +
                         " (credentials as http://user:password@host/...)");
}
