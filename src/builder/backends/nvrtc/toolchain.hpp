// kiln internal: the JIT backend (docs/architecture.md §3): NVRTC, nvJitLink and nvFatbin, in process.
//
// The three libraries are opened with dlopen, never linked, so that kiln runs (loads prepared
// artifacts, builds with nvcc) on a machine that has none of them; each one missing is a status
// saying which library and every place searched, never a crash.
//
// Search, per library (NVRTC shown; nvJitLink and nvFatbin alike with their own names):
//   1. $KILN_NVRTC (KILN_NVJITLINK, KILN_NVFATBIN) when set and non-empty: that path ONLY.
//      An explicit choice is never silently replaced by another copy (a typo must show), and it
//      lets tests and users force a library absent (KILN_NVFATBIN=/nonexistent).
//   2. the sonames libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so (the loader path: ld.so.cache,
//      LD_LIBRARY_PATH, RUNPATH);
//   3. $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64 with the same three names
//      (the toolkit's lib64 is often not on the loader path).
// Libraries stay mapped for the life of the process once opened (NVRTC and nvJitLink keep
// global state and worker threads that are not safe to unmap).
//
// Headers are given by content only (NvrtcRequest::headers): NVRTC never reads an include
// directory, so what was compiled is exactly what the content key hashes. Include-path options
// (-I, --include-path, -include, --pre-include) are refused.
//
// Implemented in builder/backends/nvrtc/, one file per job: libraries.cpp (search, dlopen, status),
// request_checks.cpp, compile.cpp (NVRTC), link.cpp (nvJitLink), fatbin.cpp (nvFatbin).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <kiln/identity.hpp>
#include <kiln/kernels.hpp>

namespace kiln::builder {

// Where to look for the three libraries; each list is tried in order.
struct NvrtcSearch {
  std::vector<std::string> nvrtc;
  std::vector<std::string> nvjitlink;
  std::vector<std::string> nvfatbin;
  // Which environment variable set a list (it then holds that one path), per library; empty
  // when the default search applies. Only for messages.
  std::string nvrtc_env, nvjitlink_env, nvfatbin_env;

  // The search described at the top of this file, from the current environment.
  static NvrtcSearch from_environment();
};

// What became of one library.
struct NvrtcLibraryStatus {
  std::string which;        // "NVRTC", "nvJitLink", "nvFatbin"
  bool found = false;       // opened and every required entry point resolved
  std::string path;         // the candidate dlopen accepted (soname or path); empty if none
  int version = 0;          // e.g. 13000 (major * 1000 + minor * 10); 0 when not found
  std::vector<std::string> searched;  // "candidate: dlopen's answer", in order
  std::string detail;       // one line: where it was found, or why not and what to do
  std::string version_text() const;   // "13.0", or "" when not found
};

struct NvrtcSource {
  std::string name;   // as it appears in NVRTC's log ("saxpy.cu(3): error ...")
  std::string bytes;
};

struct JitHeader {
  std::string include_name;  // as written in #include "..." / <...>
  std::string bytes;
};

struct NvrtcKernel {
  std::string name;    // a name expression: "saxpy", "scale<float>", "ns::step<3>"
  std::string source;  // the NvrtcSource that defines it; may be empty when there is one source
  NvrtcKernel(std::string kernel_name, std::string defining_source = {})  // NOLINT: implicit by design
      : name(std::move(kernel_name)), source(std::move(defining_source)) {}
  NvrtcKernel(const char *kernel_name) : name(kernel_name) {}  // NOLINT
};

struct NvrtcRequest {
  std::vector<NvrtcSource> sources;
  std::vector<JitHeader> headers;
  std::vector<std::string> defines;   // "NAME" or "NAME=VALUE", passed as -D
  std::vector<std::string> options;   // further NVRTC options ("-O3", "--use_fast_math", ...)
  std::vector<std::string> link_options;  // further nvJitLink options (linked builds only)
  std::vector<Arch> archs;            // sm_XY[a|f]: a cubin each; compute_XY[a|f]: PTX each
  // Link-time optimisation: each source becomes LTO-IR (-dlto) and nvJitLink links them with
  // -lto per arch. Without it, one source compiles straight to a cubin / PTX; several sources
  // compile as relocatable code (-rdc=true) and nvJitLink links the cubins per sm arch, while a
  // compute arch is linked through LTO-IR anyway (only LTO can link PTX).
  bool lto = false;
  std::vector<NvrtcKernel> kernels;     // name expressions whose lowered names to record
  unsigned jobs = 0;                  // parallel compiles; 0: one per hardware thread
};

struct JitKernelName {
  std::string name;          // the name expression as given
  std::string lowered_name;  // what the driver knows it by ("saxpy", "_Z5scaleIfEvPT_S0_i")
};

struct JitStep {
  std::string what;  // "nvrtc saxpy.cu sm_90", "nvJitLink sm_90", "dlopen"
  double ms = 0;
};

struct JitResult {
  std::vector<DeviceImage> images;   // in the order of NvrtcRequest::archs
  std::vector<JitKernelName> kernels;  // in the order of NvrtcRequest::kernels
  std::string log;                   // every program's and link's log, each under a heading
  std::vector<JitStep> steps;        // per step: the compiles, then the links, in request order
  double total_ms = 0;               // wall clock of compile()
  int nvrtc_version = 0;             // what wrote the images (KernelImages::cuda_toolkit_version)
  int nvjitlink_version = 0;         // 0 when nvJitLink was not used

  // The lowered names, for KernelImages::kernels.
  std::vector<std::string> lowered_names() const;
  // images + lowered names + NVRTC version, ready for load_kernels.
  KernelImages kernel_images(std::string label = {}) const;
};

class NvrtcToolchain {
 public:
  // The process-wide toolchain, searched from the environment once. Thread-safe.
  static NvrtcToolchain &instance();

  explicit NvrtcToolchain(const NvrtcSearch &search);
  NvrtcToolchain(const NvrtcToolchain &) = delete;
  NvrtcToolchain &operator=(const NvrtcToolchain &) = delete;
  ~NvrtcToolchain();

  const NvrtcLibraryStatus &nvrtc() const noexcept;
  const NvrtcLibraryStatus &nvjitlink() const noexcept;
  const NvrtcLibraryStatus &nvfatbin() const noexcept;

  // The archs this NVRTC compiles for (nvrtcGetSupportedArchs): {75, 80, 86, ...}.
  const std::vector<int> &supported_archs() const noexcept;

  // For `kiln doctor`: {"nvrtc": {found, path, version, searched, detail}, "nvjitlink": ...,
  // "nvfatbin": ..., "supported_archs": [...]}.
  nlohmann::json describe() const;
  // For the build identity: "nvrtc=13.0;nvjitlink=13.0" (absent libraries say "none").
  std::string identity() const;

  // Compile (and link) a request. Thread-safe: several compiles may run at once.
  // Throws UsageError (bad request: no source, no arch, a duplicate or unsupported arch, a
  // kernel whose source is not named when there are several, a refused option),
  // ToolchainMissingError (NVRTC absent) or NotFoundError (nvJitLink absent when the request
  // needs linking), each saying where it looked,
  // BuildError (compilation or link failed: the message names the source and arch and gives the
  // first error line, log() the whole log).
  JitResult compile(const NvrtcRequest &request) const;

  // One fatbin holding `images` (cubin and PTX), or nullopt when nvFatbin is absent.
  // Throws UsageError for a fatbin among the inputs or no input, BuildError when nvFatbin fails.
  std::optional<DeviceImage> package_fatbin(const std::vector<DeviceImage> &images) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// NvrtcToolchain::instance().compile(request).
JitResult compile(const NvrtcRequest &request);
// NvrtcToolchain::instance().package_fatbin(images).
std::optional<DeviceImage> package_fatbin(const std::vector<DeviceImage> &images);

}  // namespace kiln::builder
