// kiln internal: opening NVRTC, nvJitLink and nvFatbin with dlopen and resolving their entry
// points (the search is described in builder/backends/nvrtc/toolchain.hpp); what each library's status says.
#include "builder/backends/nvrtc/libraries.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/environment.hpp"
#include "support/text.hpp"

namespace kiln::builder {
namespace {

using support::starts_with;

std::string env(const char *name) { return support::env_value(name).value_or(""); }

std::string version_text(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// Candidates for one library: $env alone when set, else sonames, then the toolkit's lib64.
std::vector<std::string> candidates(const char *env_name, const std::vector<std::string> &names,
                                    std::string *env_used) {
  const std::string explicit_path = env(env_name);
  if (!explicit_path.empty()) {
    *env_used = env_name;
    return {explicit_path};
  }
  std::vector<std::string> list = names;
  std::vector<std::string> dirs;
  for (const char *home : {"CUDA_HOME", "CUDA_PATH"}) {
    if (!env(home).empty()) dirs.push_back(env(home) + "/lib64");
  }
  dirs.emplace_back("/usr/local/cuda/lib64");
  std::vector<std::string> seen;
  for (const auto &dir : dirs) {
    if (std::find(seen.begin(), seen.end(), dir) != seen.end()) continue;
    seen.push_back(dir);
    for (const auto &name : names) list.push_back(dir + "/" + name);
  }
  return list;
}

// Opens the first candidate dlopen accepts; records every answer.
void *open_first(const std::vector<std::string> &list, NvrtcLibraryStatus *status) {
  for (const auto &candidate : list) {
    dlerror();
    void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      status->path = candidate;
      status->searched.push_back(candidate + ": opened");
      return handle;
    }
    const char *error = dlerror();
    std::string why = error != nullptr ? error : "dlopen failed";
    // dlerror() repeats the name: "libx.so: cannot open shared object file: ...".
    if (starts_with(why, candidate + ": ")) why.erase(0, candidate.size() + 2);
    status->searched.push_back(candidate + ": " + why);
  }
  return nullptr;
}

// Resolves `name` into `slot`; nvJitLink's versioned names (__nvJitLinkCreate_13_0 ...) first.
template <class Fn>
bool resolve(void *handle, const char *name, bool versioned, Fn &slot, std::string *missing) {
  std::vector<std::string> names;
  if (versioned) {
    names.push_back(std::string("__") + name + "_13_0");
    for (int minor = 9; minor >= 0; --minor) {
      names.push_back(std::string("__") + name + "_12_" + std::to_string(minor));
    }
  }
  names.emplace_back(name);
  for (const auto &candidate : names) {
    if (void *symbol = dlsym(handle, candidate.c_str())) {
      slot = reinterpret_cast<Fn>(symbol);
      return true;
    }
  }
  if (!missing->empty()) *missing += ", ";
  *missing += name;
  return false;
}

// Finishes a status: found or not, and the one-line detail.
void settle(NvrtcLibraryStatus *status, void *handle, const std::string &missing,
            const std::string &env_name, const char *install_hint) {
  if (handle != nullptr && missing.empty()) {
    status->found = true;
    status->detail = status->which + " " + version_text(status->version) + " (" + status->path + ")";
    return;
  }
  status->found = false;
  if (handle != nullptr) {
    status->detail = status->which + " at " + status->path + " lacks " + missing +
                     ": it is older than CUDA 12.0 or not " + status->which + "; " + install_hint;
    status->path.clear();
    status->version = 0;
    return;
  }
  // "searched a, b, c" -- with dlopen's words only where they say more than "no such file".
  std::string tried;
  for (const auto &line : status->searched) {
    std::string item = line;
    const auto absent = item.find(": cannot open shared object file: No such file or directory");
    if (absent != std::string::npos) item.erase(absent);
    tried += (tried.empty() ? "" : ", ") + item;
  }
  status->detail = status->which + " not found (searched " +
                   (tried.empty() ? std::string("nothing: empty search list") : tried) + ")";
  status->detail += env_name.empty() ? std::string("; ") + install_hint
                                     : "; " + env_name + " names it: point " + env_name +
                                           " at the library or unset it to search the default places";
}

// NvrtcLibraryStatus::version from what a library's version entry point says: 13000 for 13.0;
// 0 when it cannot say.
template <class Number, class Result>
int library_version(Result (*version)(Number *, Number *)) {
  Number major = 0, minor = 0;
  if (version(&major, &minor) != 0) return 0;
  return static_cast<int>(major * 1000 + minor * 10);
}

// Opens the first of `candidates` that dlopen accepts, lets `bind` resolve its entry points
// (naming those missing) and, when all resolved, ask the library what it is; settles `status`.
template <class Bind>
void open_library(NvrtcLibraryStatus *status, const std::vector<std::string> &candidates,
                  const std::string &env_name, const char *install_hint, Bind bind) {
  std::string missing;
  void *handle = open_first(candidates, status);
  if (handle != nullptr) bind(handle, &missing);
  settle(status, handle, missing, env_name, install_hint);
}

}  // namespace

NvrtcSearch NvrtcSearch::from_environment() {
  NvrtcSearch search;
  search.nvrtc = candidates("KILN_NVRTC", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"},
                            &search.nvrtc_env);
  search.nvjitlink = candidates(
      "KILN_NVJITLINK", {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"},
      &search.nvjitlink_env);
  search.nvfatbin = candidates(
      "KILN_NVFATBIN", {"libnvfatbin.so.13", "libnvfatbin.so.12", "libnvfatbin.so"},
      &search.nvfatbin_env);
  return search;
}

std::string NvrtcLibraryStatus::version_text() const { return builder::version_text(version); }

NvrtcToolchain &NvrtcToolchain::instance() {
  static std::once_flag once;
  static NvrtcToolchain *toolchain = nullptr;  // never destroyed: the libraries stay mapped
  std::call_once(once, [] { toolchain = new NvrtcToolchain(NvrtcSearch::from_environment()); });
  return *toolchain;
}

NvrtcToolchain::NvrtcToolchain(const NvrtcSearch &search) : impl_(std::make_unique<Impl>()) {
  auto &d = *impl_;

  d.nvrtc.which = "NVRTC";
  const char *nvrtc_hint =
      "install the CUDA toolkit's NVRTC (e.g. the cuda-nvrtc-13-0 package) or set KILN_NVRTC "
      "to its libnvrtc.so";
  const auto bind_nvrtc = [&](void *handle, std::string *missing) {
    auto &a = d.rtc;
    resolve(handle, "nvrtcGetErrorString", false, a.get_error_string, missing);
    resolve(handle, "nvrtcVersion", false, a.version, missing);
    resolve(handle, "nvrtcGetNumSupportedArchs", false, a.get_num_supported_archs, missing);
    resolve(handle, "nvrtcGetSupportedArchs", false, a.get_supported_archs, missing);
    resolve(handle, "nvrtcCreateProgram", false, a.create_program, missing);
    resolve(handle, "nvrtcDestroyProgram", false, a.destroy_program, missing);
    resolve(handle, "nvrtcCompileProgram", false, a.compile_program, missing);
    resolve(handle, "nvrtcGetPTXSize", false, a.get_ptx_size, missing);
    resolve(handle, "nvrtcGetPTX", false, a.get_ptx, missing);
    resolve(handle, "nvrtcGetCUBINSize", false, a.get_cubin_size, missing);
    resolve(handle, "nvrtcGetCUBIN", false, a.get_cubin, missing);
    resolve(handle, "nvrtcGetLTOIRSize", false, a.get_ltoir_size, missing);
    resolve(handle, "nvrtcGetLTOIR", false, a.get_ltoir, missing);
    resolve(handle, "nvrtcGetProgramLogSize", false, a.get_program_log_size, missing);
    resolve(handle, "nvrtcGetProgramLog", false, a.get_program_log, missing);
    resolve(handle, "nvrtcAddNameExpression", false, a.add_name_expression, missing);
    resolve(handle, "nvrtcGetLoweredName", false, a.get_lowered_name, missing);
    if (!missing->empty()) return;
    d.nvrtc.version = library_version(a.version);
    int count = 0;
    if (a.get_num_supported_archs(&count) == 0 && count > 0) {
      d.supported.resize(static_cast<std::size_t>(count));
      if (a.get_supported_archs(d.supported.data()) != 0) d.supported.clear();
    }
  };
  open_library(&d.nvrtc, search.nvrtc, search.nvrtc_env, nvrtc_hint, bind_nvrtc);

  // nvJitLink: its entry points are exported under versioned names (__nvJitLinkCreate_13_0),
  // which nvJitLink.h's inline wrappers call; the plain names are older aliases.
  d.nvjitlink.which = "nvJitLink";
  const char *link_hint =
      "install the CUDA toolkit's nvJitLink (e.g. the libnvjitlink-13-0 package) or set "
      "KILN_NVJITLINK to its libnvJitLink.so; it is needed for LTO and for several sources";
  const auto bind_nvjitlink = [&](void *handle, std::string *missing) {
    auto &a = d.link;
    resolve(handle, "nvJitLinkCreate", true, a.create, missing);
    resolve(handle, "nvJitLinkDestroy", true, a.destroy, missing);
    resolve(handle, "nvJitLinkAddData", true, a.add_data, missing);
    resolve(handle, "nvJitLinkComplete", true, a.complete, missing);
    resolve(handle, "nvJitLinkGetLinkedCubinSize", true, a.get_linked_cubin_size, missing);
    resolve(handle, "nvJitLinkGetLinkedCubin", true, a.get_linked_cubin, missing);
    resolve(handle, "nvJitLinkGetLinkedPtxSize", true, a.get_linked_ptx_size, missing);
    resolve(handle, "nvJitLinkGetLinkedPtx", true, a.get_linked_ptx, missing);
    resolve(handle, "nvJitLinkGetErrorLogSize", true, a.get_error_log_size, missing);
    resolve(handle, "nvJitLinkGetErrorLog", true, a.get_error_log, missing);
    resolve(handle, "nvJitLinkGetInfoLogSize", true, a.get_info_log_size, missing);
    resolve(handle, "nvJitLinkGetInfoLog", true, a.get_info_log, missing);
    resolve(handle, "nvJitLinkVersion", true, a.version, missing);
    if (missing->empty()) d.nvjitlink.version = library_version(a.version);
  };
  open_library(&d.nvjitlink, search.nvjitlink, search.nvjitlink_env, link_hint, bind_nvjitlink);

  // nvFatbin (CUDA 12.4+).
  d.nvfatbin.which = "nvFatbin";
  const char *fatbin_hint =
      "install the CUDA toolkit's nvFatbin (e.g. the libnvfatbin-13-0 package) or set "
      "KILN_NVFATBIN to its libnvfatbin.so; without it JIT builds keep one image per arch";
  const auto bind_nvfatbin = [&](void *handle, std::string *missing) {
    auto &a = d.fat;
    resolve(handle, "nvFatbinGetErrorString", false, a.get_error_string, missing);
    resolve(handle, "nvFatbinCreate", false, a.create, missing);
    resolve(handle, "nvFatbinDestroy", false, a.destroy, missing);
    resolve(handle, "nvFatbinAddPTX", false, a.add_ptx, missing);
    resolve(handle, "nvFatbinAddCubin", false, a.add_cubin, missing);
    resolve(handle, "nvFatbinSize", false, a.size, missing);
    resolve(handle, "nvFatbinGet", false, a.get, missing);
    resolve(handle, "nvFatbinVersion", false, a.version, missing);
    if (missing->empty()) d.nvfatbin.version = library_version(a.version);
  };
  open_library(&d.nvfatbin, search.nvfatbin, search.nvfatbin_env, fatbin_hint, bind_nvfatbin);
}

NvrtcToolchain::~NvrtcToolchain() = default;

const NvrtcLibraryStatus &NvrtcToolchain::nvrtc() const noexcept { return impl_->nvrtc; }
const NvrtcLibraryStatus &NvrtcToolchain::nvjitlink() const noexcept { return impl_->nvjitlink; }
const NvrtcLibraryStatus &NvrtcToolchain::nvfatbin() const noexcept { return impl_->nvfatbin; }
const std::vector<int> &NvrtcToolchain::supported_archs() const noexcept { return impl_->supported; }

nlohmann::json NvrtcToolchain::describe() const {
  const auto one = [](const NvrtcLibraryStatus &status) {
    nlohmann::json out = {{"found", status.found},
                          {"path", status.path},
                          {"version", status.version_text()},
                          {"searched", status.searched},
                          {"detail", status.detail}};
    return out;
  };
  nlohmann::json out;
  out["nvrtc"] = one(impl_->nvrtc);
  out["nvjitlink"] = one(impl_->nvjitlink);
  out["nvfatbin"] = one(impl_->nvfatbin);
  out["supported_archs"] = impl_->supported;
  return out;
}

std::string NvrtcToolchain::identity() const {
  const auto one = [](const NvrtcLibraryStatus &status) {
    return status.found ? status.version_text() : std::string("none");
  };
  return "nvrtc=" + one(impl_->nvrtc) + ";nvjitlink=" + one(impl_->nvjitlink);
}

}  // namespace kiln::builder
