// kiln internal: the JIT backend -- NVRTC, nvJitLink and nvFatbin through dlopen (see nvrtc.hpp).
#include "support/elapsed.hpp"
#include "builder/nvrtc.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <kiln/errors.hpp>

namespace kiln::builder {

// The three libraries' C APIs, declared here from their documented ABI rather than taken from
// nvrtc.h / nvJitLink.h / nvFatbin.h: kiln then builds where those headers are absent or of
// another version (nvFatbin.h is not in every toolkit), and nvJitLink.h's inline wrappers,
// which name one versioned symbol each, are not involved.
namespace {

using support::ms_since;

using nvrtcProgram = struct kiln_nvrtc_program *;
using NvrtcResult = int;  // nvrtcResult: 0 NVRTC_SUCCESS, 6 NVRTC_ERROR_COMPILATION, ...
using nvJitLinkHandle = struct kiln_nvjitlink *;
using NvJitLinkResult = int;  // nvJitLinkResult: 0 NVJITLINK_SUCCESS, ...
using nvFatbinHandle = struct kiln_nvfatbin *;
using NvFatbinResult = int;  // nvFatbinResult: 0 NVFATBIN_SUCCESS, 9 NVFATBIN_ERROR_INVALID_ARCH

constexpr int kNvJitLinkInputCubin = 1;  // NVJITLINK_INPUT_CUBIN
constexpr int kNvJitLinkInputLtoir = 3;  // NVJITLINK_INPUT_LTOIR
constexpr int kNvFatbinErrorInvalidArch = 9;

struct NvrtcApi {
  const char *(*get_error_string)(NvrtcResult) = nullptr;
  NvrtcResult (*version)(int *, int *) = nullptr;
  NvrtcResult (*get_num_supported_archs)(int *) = nullptr;
  NvrtcResult (*get_supported_archs)(int *) = nullptr;
  NvrtcResult (*create_program)(nvrtcProgram *, const char *, const char *, int,
                                const char *const *, const char *const *) = nullptr;
  NvrtcResult (*destroy_program)(nvrtcProgram *) = nullptr;
  NvrtcResult (*compile_program)(nvrtcProgram, int, const char *const *) = nullptr;
  NvrtcResult (*get_ptx_size)(nvrtcProgram, std::size_t *) = nullptr;
  NvrtcResult (*get_ptx)(nvrtcProgram, char *) = nullptr;
  NvrtcResult (*get_cubin_size)(nvrtcProgram, std::size_t *) = nullptr;
  NvrtcResult (*get_cubin)(nvrtcProgram, char *) = nullptr;
  NvrtcResult (*get_ltoir_size)(nvrtcProgram, std::size_t *) = nullptr;
  NvrtcResult (*get_ltoir)(nvrtcProgram, char *) = nullptr;
  NvrtcResult (*get_program_log_size)(nvrtcProgram, std::size_t *) = nullptr;
  NvrtcResult (*get_program_log)(nvrtcProgram, char *) = nullptr;
  NvrtcResult (*add_name_expression)(nvrtcProgram, const char *) = nullptr;
  NvrtcResult (*get_lowered_name)(nvrtcProgram, const char *, const char **) = nullptr;
};

struct NvJitLinkApi {
  NvJitLinkResult (*create)(nvJitLinkHandle *, std::uint32_t, const char *const *) = nullptr;
  NvJitLinkResult (*destroy)(nvJitLinkHandle *) = nullptr;
  NvJitLinkResult (*add_data)(nvJitLinkHandle, int, const void *, std::size_t, const char *) = nullptr;
  NvJitLinkResult (*complete)(nvJitLinkHandle) = nullptr;
  NvJitLinkResult (*get_linked_cubin_size)(nvJitLinkHandle, std::size_t *) = nullptr;
  NvJitLinkResult (*get_linked_cubin)(nvJitLinkHandle, void *) = nullptr;
  NvJitLinkResult (*get_linked_ptx_size)(nvJitLinkHandle, std::size_t *) = nullptr;
  NvJitLinkResult (*get_linked_ptx)(nvJitLinkHandle, char *) = nullptr;
  NvJitLinkResult (*get_error_log_size)(nvJitLinkHandle, std::size_t *) = nullptr;
  NvJitLinkResult (*get_error_log)(nvJitLinkHandle, char *) = nullptr;
  NvJitLinkResult (*get_info_log_size)(nvJitLinkHandle, std::size_t *) = nullptr;
  NvJitLinkResult (*get_info_log)(nvJitLinkHandle, char *) = nullptr;
  NvJitLinkResult (*version)(unsigned *, unsigned *) = nullptr;
};

struct NvFatbinApi {
  const char *(*get_error_string)(NvFatbinResult) = nullptr;
  NvFatbinResult (*create)(nvFatbinHandle *, const char **, std::size_t) = nullptr;
  NvFatbinResult (*destroy)(nvFatbinHandle *) = nullptr;
  NvFatbinResult (*add_ptx)(nvFatbinHandle, const char *, std::size_t, const char *, const char *,
                            const char *) = nullptr;
  NvFatbinResult (*add_cubin)(nvFatbinHandle, const void *, std::size_t, const char *,
                              const char *) = nullptr;
  NvFatbinResult (*size)(nvFatbinHandle, std::size_t *) = nullptr;
  NvFatbinResult (*get)(nvFatbinHandle, void *) = nullptr;
  NvFatbinResult (*version)(unsigned *, unsigned *) = nullptr;
};

std::string env(const char *name) {
  const char *value = ::secure_getenv(name);
  return value != nullptr ? value : "";
}

std::string version_text(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string joined(const std::vector<std::string> &items, const char *separator) {
  std::string text;
  for (const auto &item : items) {
    if (!text.empty()) text += separator;
    text += item;
  }
  return text;
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
void *open_first(const std::vector<std::string> &list, JitLibraryStatus *status) {
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

// The thrown error types of one failed (parallel) task, kept to rethrow in request order.
struct TaskOutcome {
  std::exception_ptr error;
};

// Runs fn(0..count-1) on up to `jobs` threads; stops handing out tasks after a failure;
// rethrows the failure of the lowest task index.
template <class Fn>
void run_parallel(std::size_t count, unsigned jobs, Fn fn) {
  std::vector<TaskOutcome> outcomes(count);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto worker = [&] {
    for (;;) {
      if (failed.load()) return;
      const std::size_t index = next.fetch_add(1);
      if (index >= count) return;
      try {
        fn(index);
      } catch (...) {
        outcomes[index].error = std::current_exception();
        failed.store(true);
      }
    }
  };
  unsigned threads = jobs != 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, count));
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
    worker();
    for (auto &thread : pool) thread.join();
  }
  for (const auto &outcome : outcomes) {
    if (outcome.error) std::rethrow_exception(outcome.error);
  }
}

// The first line of a compiler log that says "error", else its first non-empty line.
std::string first_error_line(const std::string &log) {
  std::string first;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    if (line.find("error") != std::string::npos) return line;
    if (first.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first = line;
    start = end + 1;
  }
  return first;
}

std::string strip_nuls(std::string bytes) {
  while (!bytes.empty() && bytes.back() == '\0') bytes.pop_back();
  return bytes;
}

// Options kiln sets itself or that would make the build read files the content key misses.
void check_option(const std::string &option) {
  struct Refused {
    const char *prefix;
    const char *why;
  };
  static const Refused refused[] = {
      {"-I", "headers are given by content (JitRequest::headers), never from include directories"},
      {"--include-path", "headers are given by content (JitRequest::headers), never from include directories"},
      {"-include", "headers are given by content (JitRequest::headers); #include them from a source"},
      {"--pre-include", "headers are given by content (JitRequest::headers); #include them from a source"},
      {"-arch", "target archs are JitRequest::archs"},
      {"--gpu-architecture", "target archs are JitRequest::archs"},
      {"-dlto", "set JitRequest::lto"},
      {"--dlink-time-opt", "set JitRequest::lto"},
      {"-rdc", "relocatable code is used when several sources are linked; set JitRequest::lto to link with LTO"},
      {"--relocatable-device-code", "relocatable code is used when several sources are linked"},
      {"-pch", "precompiled headers read and write files outside the store"},
      {"--pch", "precompiled headers read and write files outside the store"},
      {"-create-pch", "precompiled headers read and write files outside the store"},
      {"--create-pch", "precompiled headers read and write files outside the store"},
      {"-use-pch", "precompiled headers read and write files outside the store"},
      {"--use-pch", "precompiled headers read and write files outside the store"},
      {"-time", "it writes a file outside the store"},
      {"--time", "it writes a file outside the store"},
      {"-fdevice-time-trace", "it writes a file outside the store"},
      {"--fdevice-time-trace", "it writes a file outside the store"},
  };
  for (const auto &rule : refused) {
    const std::string_view prefix = rule.prefix;
    if (!starts_with(option, prefix)) continue;
    // "-I..." and "-arch..." are prefixes; the others must end there or continue with '='.
    const bool prefix_form = prefix == "-I" || prefix == "-arch";
    if (prefix_form || option.size() == prefix.size() || option[prefix.size()] == '=') {
      throw UsageError("JIT option \"" + option + "\" is refused: " + rule.why);
    }
  }
}

void check_define(const std::string &define) {
  const std::string name = define.substr(0, define.find('='));
  const bool bad = name.empty() || name.front() == '-' ||
                   name.find_first_of(" \t\r\n") != std::string::npos ||
                   (name.front() >= '0' && name.front() <= '9');
  if (bad) {
    throw UsageError("JIT define \"" + define + "\" is malformed: expected NAME or NAME=VALUE with "
                     "NAME an identifier (or a function-like macro NAME(args))");
  }
}

// nvJitLink's / nvFatbin's arch name for an image: sm_XY[a|f] (PTX targets link for the same sm).
std::string sm_name(const Arch &arch) {
  Arch sass = arch;
  sass.kind = Arch::Kind::sass;
  return sass.to_string();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct JitToolchain::Impl {
  JitLibraryStatus nvrtc, nvjitlink, nvfatbin;
  NvrtcApi rtc;
  NvJitLinkApi link;
  NvFatbinApi fat;
  std::vector<int> supported;

  std::string nvrtc_error(NvrtcResult result) const {
    const char *text = rtc.get_error_string != nullptr ? rtc.get_error_string(result) : nullptr;
    return std::string(text != nullptr ? text : "NVRTC error") + " (" + std::to_string(result) + ")";
  }
  std::string fatbin_error(NvFatbinResult result) const {
    const char *text = fat.get_error_string != nullptr ? fat.get_error_string(result) : nullptr;
    return std::string(text != nullptr ? text : "nvFatbin error") + " (" + std::to_string(result) + ")";
  }
};

namespace {

// Finishes a status: found or not, and the one-line detail.
void settle(JitLibraryStatus *status, void *handle, const std::string &missing,
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

}  // namespace

JitSearch JitSearch::from_environment() {
  JitSearch search;
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

std::string JitLibraryStatus::version_text() const { return builder::version_text(version); }

JitToolchain &JitToolchain::instance() {
  static std::once_flag once;
  static JitToolchain *toolchain = nullptr;  // never destroyed: the libraries stay mapped
  std::call_once(once, [] { toolchain = new JitToolchain(JitSearch::from_environment()); });
  return *toolchain;
}

JitToolchain::JitToolchain(const JitSearch &search) : impl_(std::make_unique<Impl>()) {
  auto &d = *impl_;

  // NVRTC.
  d.nvrtc.which = "NVRTC";
  if (void *handle = open_first(search.nvrtc, &d.nvrtc)) {
    std::string missing;
    auto &a = d.rtc;
    resolve(handle, "nvrtcGetErrorString", false, a.get_error_string, &missing);
    resolve(handle, "nvrtcVersion", false, a.version, &missing);
    resolve(handle, "nvrtcGetNumSupportedArchs", false, a.get_num_supported_archs, &missing);
    resolve(handle, "nvrtcGetSupportedArchs", false, a.get_supported_archs, &missing);
    resolve(handle, "nvrtcCreateProgram", false, a.create_program, &missing);
    resolve(handle, "nvrtcDestroyProgram", false, a.destroy_program, &missing);
    resolve(handle, "nvrtcCompileProgram", false, a.compile_program, &missing);
    resolve(handle, "nvrtcGetPTXSize", false, a.get_ptx_size, &missing);
    resolve(handle, "nvrtcGetPTX", false, a.get_ptx, &missing);
    resolve(handle, "nvrtcGetCUBINSize", false, a.get_cubin_size, &missing);
    resolve(handle, "nvrtcGetCUBIN", false, a.get_cubin, &missing);
    resolve(handle, "nvrtcGetLTOIRSize", false, a.get_ltoir_size, &missing);
    resolve(handle, "nvrtcGetLTOIR", false, a.get_ltoir, &missing);
    resolve(handle, "nvrtcGetProgramLogSize", false, a.get_program_log_size, &missing);
    resolve(handle, "nvrtcGetProgramLog", false, a.get_program_log, &missing);
    resolve(handle, "nvrtcAddNameExpression", false, a.add_name_expression, &missing);
    resolve(handle, "nvrtcGetLoweredName", false, a.get_lowered_name, &missing);
    if (missing.empty()) {
      int major = 0, minor = 0;
      if (a.version(&major, &minor) == 0) d.nvrtc.version = major * 1000 + minor * 10;
      int count = 0;
      if (a.get_num_supported_archs(&count) == 0 && count > 0) {
        d.supported.resize(static_cast<std::size_t>(count));
        if (a.get_supported_archs(d.supported.data()) != 0) d.supported.clear();
      }
    }
    settle(&d.nvrtc, handle, missing, search.nvrtc_env,
           "install the CUDA toolkit's NVRTC (e.g. the cuda-nvrtc-13-0 package) or set KILN_NVRTC "
           "to its libnvrtc.so");
  } else {
    settle(&d.nvrtc, nullptr, "", search.nvrtc_env,
           "install the CUDA toolkit's NVRTC (e.g. the cuda-nvrtc-13-0 package) or set KILN_NVRTC "
           "to its libnvrtc.so");
  }

  // nvJitLink: its entry points are exported under versioned names (__nvJitLinkCreate_13_0),
  // which nvJitLink.h's inline wrappers call; the plain names are older aliases.
  d.nvjitlink.which = "nvJitLink";
  const char *link_hint =
      "install the CUDA toolkit's nvJitLink (e.g. the libnvjitlink-13-0 package) or set "
      "KILN_NVJITLINK to its libnvJitLink.so; it is needed for LTO and for several sources";
  if (void *handle = open_first(search.nvjitlink, &d.nvjitlink)) {
    std::string missing;
    auto &a = d.link;
    resolve(handle, "nvJitLinkCreate", true, a.create, &missing);
    resolve(handle, "nvJitLinkDestroy", true, a.destroy, &missing);
    resolve(handle, "nvJitLinkAddData", true, a.add_data, &missing);
    resolve(handle, "nvJitLinkComplete", true, a.complete, &missing);
    resolve(handle, "nvJitLinkGetLinkedCubinSize", true, a.get_linked_cubin_size, &missing);
    resolve(handle, "nvJitLinkGetLinkedCubin", true, a.get_linked_cubin, &missing);
    resolve(handle, "nvJitLinkGetLinkedPtxSize", true, a.get_linked_ptx_size, &missing);
    resolve(handle, "nvJitLinkGetLinkedPtx", true, a.get_linked_ptx, &missing);
    resolve(handle, "nvJitLinkGetErrorLogSize", true, a.get_error_log_size, &missing);
    resolve(handle, "nvJitLinkGetErrorLog", true, a.get_error_log, &missing);
    resolve(handle, "nvJitLinkGetInfoLogSize", true, a.get_info_log_size, &missing);
    resolve(handle, "nvJitLinkGetInfoLog", true, a.get_info_log, &missing);
    resolve(handle, "nvJitLinkVersion", true, a.version, &missing);
    if (missing.empty()) {
      unsigned major = 0, minor = 0;
      if (a.version(&major, &minor) == 0) {
        d.nvjitlink.version = static_cast<int>(major * 1000 + minor * 10);
      }
    }
    settle(&d.nvjitlink, handle, missing, search.nvjitlink_env, link_hint);
  } else {
    settle(&d.nvjitlink, nullptr, "", search.nvjitlink_env, link_hint);
  }

  // nvFatbin (CUDA 12.4+).
  d.nvfatbin.which = "nvFatbin";
  const char *fatbin_hint =
      "install the CUDA toolkit's nvFatbin (e.g. the libnvfatbin-13-0 package) or set "
      "KILN_NVFATBIN to its libnvfatbin.so; without it JIT builds keep one image per arch";
  if (void *handle = open_first(search.nvfatbin, &d.nvfatbin)) {
    std::string missing;
    auto &a = d.fat;
    resolve(handle, "nvFatbinGetErrorString", false, a.get_error_string, &missing);
    resolve(handle, "nvFatbinCreate", false, a.create, &missing);
    resolve(handle, "nvFatbinDestroy", false, a.destroy, &missing);
    resolve(handle, "nvFatbinAddPTX", false, a.add_ptx, &missing);
    resolve(handle, "nvFatbinAddCubin", false, a.add_cubin, &missing);
    resolve(handle, "nvFatbinSize", false, a.size, &missing);
    resolve(handle, "nvFatbinGet", false, a.get, &missing);
    resolve(handle, "nvFatbinVersion", false, a.version, &missing);
    if (missing.empty()) {
      unsigned major = 0, minor = 0;
      if (a.version(&major, &minor) == 0) {
        d.nvfatbin.version = static_cast<int>(major * 1000 + minor * 10);
      }
    }
    settle(&d.nvfatbin, handle, missing, search.nvfatbin_env, fatbin_hint);
  } else {
    settle(&d.nvfatbin, nullptr, "", search.nvfatbin_env, fatbin_hint);
  }
}

JitToolchain::~JitToolchain() = default;

const JitLibraryStatus &JitToolchain::nvrtc() const noexcept { return impl_->nvrtc; }
const JitLibraryStatus &JitToolchain::nvjitlink() const noexcept { return impl_->nvjitlink; }
const JitLibraryStatus &JitToolchain::nvfatbin() const noexcept { return impl_->nvfatbin; }
const std::vector<int> &JitToolchain::supported_archs() const noexcept { return impl_->supported; }

nlohmann::json JitToolchain::describe() const {
  const auto one = [](const JitLibraryStatus &status) {
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

std::string JitToolchain::identity() const {
  const auto one = [](const JitLibraryStatus &status) {
    return status.found ? status.version_text() : std::string("none");
  };
  return "nvrtc=" + one(impl_->nvrtc) + ";nvjitlink=" + one(impl_->nvjitlink);
}

// ---------------------------------------------------------------------------------------------

namespace {

enum class Mode { direct, lto, rdc };

struct CompileTask {
  std::size_t source = 0;
  std::size_t arch = 0;
  Mode mode = Mode::direct;
};

struct CompileOutput {
  std::string bytes;  // cubin, PTX (no trailing NUL) or LTO-IR
  std::string log;
  std::vector<std::string> lowered;  // per kernel of this source, in request order (else empty)
  double ms = 0;
};

struct ProgramGuard {
  const NvrtcApi *api;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program != nullptr) api->destroy_program(&program);
  }
};

struct LinkGuard {
  const NvJitLinkApi *api;
  nvJitLinkHandle handle = nullptr;
  ~LinkGuard() {
    if (handle != nullptr) api->destroy(&handle);
  }
};

struct FatbinGuard {
  const NvFatbinApi *api;
  nvFatbinHandle handle = nullptr;
  ~FatbinGuard() {
    if (handle != nullptr) api->destroy(&handle);
  }
};

}  // namespace

JitResult JitToolchain::compile(const JitRequest &request) const {
  const auto started = std::chrono::steady_clock::now();
  const Impl &d = *impl_;
  if (!d.nvrtc.found) throw NotFoundError("cannot JIT-compile: " + d.nvrtc.detail);

  // --- The request. ---
  if (request.sources.empty()) throw UsageError("JIT request has no source");
  std::set<std::string> source_names;
  for (const auto &source : request.sources) {
    if (source.name.empty()) throw UsageError("JIT request has a source without a name");
    if (!source_names.insert(source.name).second) {
      throw UsageError("JIT request names source \"" + source.name + "\" twice");
    }
  }
  std::set<std::string> header_names;
  for (const auto &header : request.headers) {
    if (header.include_name.empty()) throw UsageError("JIT request has a header without an include name");
    if (!header_names.insert(header.include_name).second) {
      throw UsageError("JIT request names header \"" + header.include_name + "\" twice");
    }
  }
  if (request.archs.empty()) {
    throw UsageError("JIT request has no target arch: give sm_XY for a cubin, compute_XY for PTX");
  }
  for (std::size_t i = 0; i < request.archs.size(); ++i) {
    const Arch &arch = request.archs[i];
    for (std::size_t j = 0; j < i; ++j) {
      if (request.archs[j] == arch) {
        throw UsageError("JIT request lists arch " + arch.to_string() + " twice");
      }
    }
    if (!d.supported.empty() &&
        std::find(d.supported.begin(), d.supported.end(), arch.cc()) == d.supported.end()) {
      std::vector<std::string> names;
      for (int cc : d.supported) names.push_back("sm_" + std::to_string(cc));
      throw UsageError("NVRTC " + d.nvrtc.version_text() + " cannot compile for " +
                       arch.to_string() + "; it supports " + joined(names, ", "));
    }
  }
  for (const auto &define : request.defines) check_define(define);
  for (const auto &option : request.options) check_option(option);
  // kernel index -> defining source index
  std::vector<std::size_t> kernel_source(request.kernels.size(), 0);
  for (std::size_t k = 0; k < request.kernels.size(); ++k) {
    const auto &kernel = request.kernels[k];
    if (kernel.name.empty()) throw UsageError("JIT request has an empty kernel name");
    if (kernel.source.empty()) {
      if (request.sources.size() > 1) {
        throw UsageError("JIT kernel \"" + kernel.name + "\": name the source that defines it "
                         "(JitKernel{name, source}); the request has several sources");
      }
      continue;
    }
    const auto found = std::find_if(request.sources.begin(), request.sources.end(),
                                    [&](const JitSource &s) { return s.name == kernel.source; });
    if (found == request.sources.end()) {
      throw UsageError("JIT kernel \"" + kernel.name + "\" names source \"" + kernel.source +
                       "\", which the request does not have");
    }
    kernel_source[k] = static_cast<std::size_t>(found - request.sources.begin());
  }

  const bool linked = request.lto || request.sources.size() > 1;
  if (linked && !d.nvjitlink.found) {
    throw NotFoundError(std::string("cannot link the JIT build (") +
                        (request.lto ? "LTO was asked for" : "it has several sources") + "): " +
                        d.nvjitlink.detail);
  }

  // --- Compile every (source, arch). ---
  std::vector<CompileTask> tasks;
  for (std::size_t a = 0; a < request.archs.size(); ++a) {
    const bool ptx_target = request.archs[a].kind == Arch::Kind::ptx;
    Mode mode = Mode::direct;
    if (linked) mode = (request.lto || ptx_target) ? Mode::lto : Mode::rdc;
    for (std::size_t s = 0; s < request.sources.size(); ++s) tasks.push_back({s, a, mode});
  }

  std::vector<const char *> header_bytes, header_names_c;
  for (const auto &header : request.headers) {
    header_bytes.push_back(header.bytes.c_str());
    header_names_c.push_back(header.include_name.c_str());
  }

  std::vector<CompileOutput> outputs(tasks.size());
  run_parallel(tasks.size(), request.jobs, [&](std::size_t index) {
    const auto task_started = std::chrono::steady_clock::now();
    const CompileTask &task = tasks[index];
    const JitSource &source = request.sources[task.source];
    const Arch &arch = request.archs[task.arch];
    CompileOutput &out = outputs[index];

    std::vector<std::string> options;
    options.push_back("-arch=" + arch.to_string());
    if (task.mode == Mode::lto) options.emplace_back("-dlto");
    if (task.mode == Mode::rdc) options.emplace_back("-rdc=true");
    for (const auto &define : request.defines) options.push_back("-D" + define);
    for (const auto &option : request.options) options.push_back(option);
    std::vector<const char *> option_ptrs;
    for (const auto &option : options) option_ptrs.push_back(option.c_str());

    const std::string where = source.name + " for " + arch.to_string();
    ProgramGuard program{&d.rtc};
    NvrtcResult result = d.rtc.create_program(
        &program.program, source.bytes.c_str(), source.name.c_str(),
        static_cast<int>(header_bytes.size()), header_bytes.empty() ? nullptr : header_bytes.data(),
        header_names_c.empty() ? nullptr : header_names_c.data());
    if (result != 0) {
      throw BuildError("NVRTC could not create a program for " + where + ": " + d.nvrtc_error(result), "");
    }
    for (std::size_t k = 0; k < request.kernels.size(); ++k) {
      if (kernel_source[k] != task.source) continue;
      result = d.rtc.add_name_expression(program.program, request.kernels[k].name.c_str());
      if (result != 0) {
        throw BuildError("NVRTC refused kernel name \"" + request.kernels[k].name + "\" for " +
                             where + ": " + d.nvrtc_error(result), "");
      }
    }
    const NvrtcResult compiled = d.rtc.compile_program(
        program.program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
    std::size_t log_size = 0;
    if (d.rtc.get_program_log_size(program.program, &log_size) == 0 && log_size > 1) {
      out.log.resize(log_size);
      if (d.rtc.get_program_log(program.program, &out.log[0]) != 0) out.log.clear();
      out.log = strip_nuls(std::move(out.log));
    }
    if (compiled != 0) {
      const std::string line = first_error_line(out.log);
      throw BuildError("NVRTC could not compile " + where + ": " +
                           (line.empty() ? d.nvrtc_error(compiled) : line) +
                           " (options: " + joined(options, " ") + ")",
                       out.log.empty() ? d.nvrtc_error(compiled) : out.log);
    }

    // The output.
    std::size_t size = 0;
    const char *what = "";
    if (task.mode == Mode::lto) {
      what = "LTO-IR";
      result = d.rtc.get_ltoir_size(program.program, &size);
      if (result == 0) {
        out.bytes.resize(size);
        result = d.rtc.get_ltoir(program.program, &out.bytes[0]);
      }
    } else if (arch.kind == Arch::Kind::sass) {
      what = "cubin";
      result = d.rtc.get_cubin_size(program.program, &size);
      if (result == 0) {
        out.bytes.resize(size);
        result = d.rtc.get_cubin(program.program, &out.bytes[0]);
      }
    } else {
      what = "PTX";
      result = d.rtc.get_ptx_size(program.program, &size);
      if (result == 0) {
        out.bytes.resize(size);
        result = d.rtc.get_ptx(program.program, &out.bytes[0]);
        out.bytes = strip_nuls(std::move(out.bytes));
      }
    }
    if (result != 0 || out.bytes.empty()) {
      throw BuildError("NVRTC produced no " + std::string(what) + " for " + where + ": " +
                           (result != 0 ? d.nvrtc_error(result) : std::string("empty output")),
                       out.log);
    }

    // Lowered names (the same for every arch; taken from each program, used from the first).
    for (std::size_t k = 0; k < request.kernels.size(); ++k) {
      if (kernel_source[k] != task.source) continue;
      const char *lowered = nullptr;
      result = d.rtc.get_lowered_name(program.program, request.kernels[k].name.c_str(), &lowered);
      if (result != 0 || lowered == nullptr) {
        throw BuildError("NVRTC has no lowered name for kernel \"" + request.kernels[k].name +
                             "\" in " + where + ": " + d.nvrtc_error(result) +
                             "; is it a __global__ function defined in " + source.name + "?",
                         out.log);
      }
      out.lowered.emplace_back(lowered);
    }
    out.ms = ms_since(task_started);
  });

  JitResult result;
  result.nvrtc_version = d.nvrtc.version;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto &task = tasks[i];
    const std::string label = request.sources[task.source].name + " " +
                              request.archs[task.arch].to_string();
    result.steps.push_back({"nvrtc " + label, outputs[i].ms});
    if (!outputs[i].log.empty()) result.log += "== nvrtc " + label + " ==\n" + outputs[i].log + "\n";
  }
  // Kernel names from the first arch's programs.
  for (std::size_t k = 0; k < request.kernels.size(); ++k) {
    std::size_t rank = 0;  // position of kernel k among its source's kernels
    for (std::size_t j = 0; j < k; ++j) rank += kernel_source[j] == kernel_source[k] ? 1 : 0;
    const auto &lowered = outputs[kernel_source[k]].lowered;  // tasks[s] is (source s, arch 0)
    result.kernels.push_back({request.kernels[k].name, lowered.at(rank)});
  }

  if (!linked) {
    for (std::size_t a = 0; a < request.archs.size(); ++a) {
      DeviceImage image;
      image.arch = request.archs[a];
      image.kind = image.arch.kind == Arch::Kind::sass ? "cubin" : "ptx";
      image.bytes = std::move(outputs[a].bytes);  // one source: task index == arch index
      result.images.push_back(std::move(image));
    }
    result.total_ms = ms_since(started);
    return result;
  }

  // --- Link per arch with nvJitLink. ---
  result.nvjitlink_version = d.nvjitlink.version;
  struct LinkOutput {
    DeviceImage image;
    std::string log;
    double ms = 0;
  };
  std::vector<LinkOutput> links(request.archs.size());
  run_parallel(request.archs.size(), request.jobs, [&](std::size_t a) {
    const auto link_started = std::chrono::steady_clock::now();
    const Arch &arch = request.archs[a];
    const bool ptx_target = arch.kind == Arch::Kind::ptx;
    const bool lto = request.lto || ptx_target;
    std::vector<std::string> options = {"-arch=" + sm_name(arch)};
    if (lto) options.emplace_back("-lto");
    if (ptx_target) options.emplace_back("-ptx");
    for (const auto &option : request.link_options) options.push_back(option);
    std::vector<const char *> option_ptrs;
    for (const auto &option : options) option_ptrs.push_back(option.c_str());

    LinkOutput &out = links[a];
    LinkGuard link{&d.link};
    const auto logs = [&] {
      std::string text;
      std::size_t size = 0;
      if (link.handle != nullptr && d.link.get_error_log_size(link.handle, &size) == 0 && size > 1) {
        std::string part(size, '\0');
        if (d.link.get_error_log(link.handle, &part[0]) == 0) text += strip_nuls(part);
      }
      if (link.handle != nullptr && d.link.get_info_log_size(link.handle, &size) == 0 && size > 1) {
        std::string part(size, '\0');
        if (d.link.get_info_log(link.handle, &part[0]) == 0) {
          if (!text.empty() && text.back() != '\n') text += '\n';
          text += strip_nuls(part);
        }
      }
      return text;
    };
    const std::string where = "nvJitLink for " + arch.to_string() + " (" + joined(options, " ") + ")";
    NvJitLinkResult status = d.link.create(&link.handle, static_cast<std::uint32_t>(option_ptrs.size()),
                                           option_ptrs.data());
    if (status != 0) {
      throw BuildError(where + " could not start: nvJitLink error " + std::to_string(status), logs());
    }
    for (std::size_t s = 0; s < request.sources.size(); ++s) {
      const std::string &bytes = outputs[a * request.sources.size() + s].bytes;
      status = d.link.add_data(link.handle, lto ? kNvJitLinkInputLtoir : kNvJitLinkInputCubin,
                               bytes.data(), bytes.size(), request.sources[s].name.c_str());
      if (status != 0) {
        const std::string log = logs();
        throw BuildError(where + " refused the code of " + request.sources[s].name +
                             ": nvJitLink error " + std::to_string(status) +
                             (log.empty() ? "" : ": " + first_error_line(log)),
                         log);
      }
    }
    status = d.link.complete(link.handle);
    out.log = logs();
    if (status != 0) {
      throw BuildError(where + " failed: nvJitLink error " + std::to_string(status) +
                           (out.log.empty() ? "" : ": " + first_error_line(out.log)),
                       out.log);
    }
    std::size_t size = 0;
    out.image.arch = arch;
    if (ptx_target) {
      out.image.kind = "ptx";
      status = d.link.get_linked_ptx_size(link.handle, &size);
      if (status == 0) {
        out.image.bytes.resize(size);
        status = d.link.get_linked_ptx(link.handle, &out.image.bytes[0]);
        out.image.bytes = strip_nuls(std::move(out.image.bytes));
      }
    } else {
      out.image.kind = "cubin";
      status = d.link.get_linked_cubin_size(link.handle, &size);
      if (status == 0) {
        out.image.bytes.resize(size);
        status = d.link.get_linked_cubin(link.handle, &out.image.bytes[0]);
      }
    }
    if (status != 0 || out.image.bytes.empty()) {
      throw BuildError(where + " produced no " + out.image.kind + ": nvJitLink error " +
                           std::to_string(status), out.log);
    }
    out.ms = ms_since(link_started);
  });
  for (std::size_t a = 0; a < links.size(); ++a) {
    const std::string label = request.archs[a].to_string();
    result.steps.push_back({"nvJitLink " + label, links[a].ms});
    if (!links[a].log.empty()) result.log += "== nvJitLink " + label + " ==\n" + links[a].log + "\n";
    result.images.push_back(std::move(links[a].image));
  }
  result.total_ms = ms_since(started);
  return result;
}

std::optional<DeviceImage> JitToolchain::package_fatbin(const std::vector<DeviceImage> &images) const {
  const Impl &d = *impl_;
  if (images.empty()) throw UsageError("a fatbin needs at least one image");
  for (const auto &image : images) {
    if (image.kind != "cubin" && image.kind != "ptx") {
      throw UsageError("a fatbin packs cubin and PTX images, not " + image.describe());
    }
  }
  if (!d.nvfatbin.found) return std::nullopt;

  FatbinGuard fatbin{&d.fat};
  const char *no_options[] = {nullptr};
  NvFatbinResult status = d.fat.create(&fatbin.handle, no_options, 0);
  if (status != 0) throw BuildError("nvFatbin could not start: " + d.fatbin_error(status), "");
  DeviceImage out;
  out.kind = "fatbin";
  for (const auto &image : images) {
    const std::string identifier = "kiln_" + image.arch.to_string();
    // nvFatbin names archs by number ("90", "90a"); an older one wanted the full name.
    const std::string number = std::to_string(image.arch.cc()) +
                               (image.arch.suffix != '\0' ? std::string(1, image.arch.suffix) : "");
    for (const std::string &arch_name : {number, image.arch.to_string()}) {
      if (image.kind == "cubin") {
        status = d.fat.add_cubin(fatbin.handle, image.bytes.data(), image.bytes.size(),
                                 arch_name.c_str(), identifier.c_str());
      } else {
        // PTX is passed with its terminating NUL.
        status = d.fat.add_ptx(fatbin.handle, image.bytes.c_str(), image.bytes.size() + 1,
                               arch_name.c_str(), identifier.c_str(), "");
      }
      if (status != kNvFatbinErrorInvalidArch) break;
    }
    if (status != 0) {
      throw BuildError("nvFatbin refused " + image.describe() + ": " + d.fatbin_error(status), "");
    }
    out.contains.push_back(image.arch);
  }
  std::size_t size = 0;
  status = d.fat.size(fatbin.handle, &size);
  if (status == 0) {
    out.bytes.resize(size);
    status = d.fat.get(fatbin.handle, &out.bytes[0]);
  }
  if (status != 0 || out.bytes.empty()) {
    throw BuildError("nvFatbin produced no fatbin: " + d.fatbin_error(status), "");
  }
  out.arch = out.contains.front();
  return out;
}

std::vector<std::string> JitResult::lowered_names() const {
  std::vector<std::string> names;
  for (const auto &kernel : kernels) names.push_back(kernel.lowered_name);
  return names;
}

KernelImages JitResult::kernel_images(std::string label) const {
  KernelImages set;
  set.images = images;
  set.kernels = lowered_names();
  for (const auto &kernel : kernels) set.name_expressions.push_back(kernel.name);
  set.cuda_toolkit_version = nvrtc_version;
  set.label = std::move(label);
  return set;
}

JitResult compile(const JitRequest &request) { return JitToolchain::instance().compile(request); }

std::optional<DeviceImage> package_fatbin(const std::vector<DeviceImage> &images) {
  return JitToolchain::instance().package_fatbin(images);
}

}  // namespace kiln::builder
