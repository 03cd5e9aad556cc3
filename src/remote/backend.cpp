// make_backend: through the backends' module (remote/backend_module.hpp).
#include "remote/backend_module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "support/environment.hpp"

namespace kiln::remote {
namespace {

constexpr const char *kModuleName = "libkiln-remote.so";

using NewBackend = Backend *(*)(const Endpoint &);
using ModuleVersion = const char *(*)();

struct LoadedModule {
  std::string path;
  NewBackend make = nullptr;
  std::string error;  // why it could not be loaded (then make is null)
};

std::vector<std::string> module_candidates() {
  if (const auto path = support::env_value("KILN_REMOTE_MODULE")) return {*path};
  Dl_info info{};
  std::string dir;
  if (::dladdr(reinterpret_cast<const void *>(&module_candidates), &info) != 0 && info.dli_fname != nullptr) {
    char resolved[4096];
    const char *object = info.dli_fname;
    // The main program's name is as it was run (relative to a working directory that may have
    // changed since); /proc/self/exe is where it is.
    if (object[0] != '/') {
      const ssize_t n = ::readlink("/proc/self/exe", resolved, sizeof resolved - 1);
      if (n > 0) {
        resolved[n] = '\0';
        object = resolved;
      }
    }
    dir = object;
    dir = dir.substr(0, dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  }
  if (dir.empty()) dir = ".";
  return {dir + "/" + kModuleName, dir + "/kiln/" + kModuleName, dir + "/../lib/kiln/" + kModuleName};
}

LoadedModule load_module() {
  LoadedModule loaded;
  std::string looked;
  for (const auto &candidate : module_candidates()) {
    looked += (looked.empty() ? "" : ", ") + candidate;
    if (::access(candidate.c_str(), F_OK) != 0) continue;
    void *handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char *why = ::dlerror();
      loaded.error = "the remote backends' module " + candidate + " cannot be loaded (" + (why ? why : "?") +
                     "): reinstall kiln, or install libcurl and hiredis";
      return loaded;
    }
    const auto version = reinterpret_cast<ModuleVersion>(::dlsym(handle, "kiln_remote_module_version"));
    const auto make = reinterpret_cast<NewBackend>(::dlsym(handle, "kiln_remote_new_backend"));
    if (version == nullptr || make == nullptr || std::strcmp(version(), kVersion) != 0) {
      loaded.error = "the remote backends' module " + candidate + " is " +
                     (version == nullptr || make == nullptr ? std::string("not kiln's")
                                                            : "of kiln " + std::string(version())) +
                     ", not of this kiln " + kVersion + ": install the module of the same kiln";
      return loaded;  // the handle stays: nothing of it runs, and unloading would gain nothing
    }
    loaded.path = candidate;
    loaded.make = make;
    return loaded;
  }
  loaded.error = "remote caches are configured but the remote backends' module " + std::string(kModuleName) +
                 " is not installed (looked in: " + looked + "): install the kiln-remote package (from a source "
                 "install: install it whole), or set KILN_REMOTE_MODULE to the module's path, or turn remotes off "
                 "(KILN_REMOTE=off)";
  return loaded;
}

// Loaded once per process and never unloaded: backends it made may live to the process's end.
const LoadedModule &module() {
  static std::once_flag once;
  static LoadedModule loaded;
  std::call_once(once, [] { loaded = load_module(); });
  return loaded;
}

}  // namespace

std::string backend_module_path() {
  const LoadedModule &loaded = module();
  if (loaded.make == nullptr) throw UsageError(loaded.error);
  return loaded.path;
}

std::unique_ptr<Backend> make_backend(const Endpoint &endpoint) {
  const LoadedModule &loaded = module();
  if (loaded.make == nullptr) throw UsageError(loaded.error);
  return std::unique_ptr<Backend>(loaded.make(endpoint));
}

}  // namespace kiln::remote
