// kiln internal: the C APIs of NVRTC, nvJitLink and nvFatbin as kiln opens them (see
// builder/backends/nvrtc/toolchain.hpp), and NvrtcToolchain::Impl, which the compile, link and fatbin steps share.
//
// The APIs are declared here from their documented ABI rather than taken from nvrtc.h /
// nvJitLink.h / nvFatbin.h: kiln then builds where those headers are absent or of another
// version (nvFatbin.h is not in every toolkit), and nvJitLink.h's inline wrappers, which name one
// versioned symbol each, are not involved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "builder/backends/nvrtc/toolchain.hpp"

namespace kiln::builder {
namespace jit {

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

// A program or handle of one of the libraries, destroyed on every way out of the step using it.
template <class Handle, class Result>
struct OwnedHandle {
  Result (*destroy)(Handle *);
  Handle handle = nullptr;

  explicit OwnedHandle(Result (*destroy_fn)(Handle *)) : destroy(destroy_fn) {}
  OwnedHandle(const OwnedHandle &) = delete;
  OwnedHandle &operator=(const OwnedHandle &) = delete;
  ~OwnedHandle() {
    if (handle != nullptr) destroy(&handle);
  }
};

}  // namespace jit

struct NvrtcToolchain::Impl {
  NvrtcLibraryStatus nvrtc, nvjitlink, nvfatbin;
  jit::NvrtcApi rtc;
  jit::NvJitLinkApi link;
  jit::NvFatbinApi fat;
  std::vector<int> supported;

  std::string nvrtc_error(jit::NvrtcResult result) const {
    const char *text = rtc.get_error_string != nullptr ? rtc.get_error_string(result) : nullptr;
    return std::string(text != nullptr ? text : "NVRTC error") + " (" + std::to_string(result) + ")";
  }
  std::string fatbin_error(jit::NvFatbinResult result) const {
    const char *text = fat.get_error_string != nullptr ? fat.get_error_string(result) : nullptr;
    return std::string(text != nullptr ? text : "nvFatbin error") + " (" + std::to_string(result) + ")";
  }
};

}  // namespace kiln::builder
