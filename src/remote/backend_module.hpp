// The remote backends live in a module of their own, libkiln-remote.so, loaded on a build's
// first remote use: libcurl and hiredis (and the TLS, Kerberos and LDAP libraries curl brings,
// 40 shared objects in all on Debian 12) are then never mapped into a process that only loads
// plugins -- a controller's start-up, its dlopen (every library in the process is searched for
// every symbol a plugin binds: +13 us per 1 MB plugin with them) and its attack surface stay
// those of libkiln alone.
//
// Where libkiln looks for it, first found wins:
//   1. KILN_REMOTE_MODULE (a path; secure_getenv);
//   2. beside the object holding libkiln's code (libkiln.so, or the program a static libkiln is
//      linked into): DIR/libkiln-remote.so, DIR/kiln/libkiln-remote.so (an installed
//      libkiln.so: <prefix>/lib/kiln/), DIR/../lib/kiln/libkiln-remote.so (an installed program
//      with a static libkiln: <prefix>/bin -> <prefix>/lib/kiln; a build tree's programs one
//      level below its root).
#pragma once

#include "remote/backend.hpp"

extern "C" {
// The kiln version the module was built with: it must be this libkiln's.
const char *kiln_remote_module_version();
kiln::remote::Backend *kiln_remote_new_backend(const kiln::remote::Endpoint &endpoint);
}

namespace kiln::remote {

// The module's path, loading it on first use; UsageError naming every place looked in (and how
// to fix it) when it is absent, cannot be loaded or is of another kiln version.
std::string backend_module_path();

}  // namespace kiln::remote
