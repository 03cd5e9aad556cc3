// kiln: device images (cubin / PTX / fatbin) and the kernels loaded from them.
//
// A device-image artifact is a set of images, one per target arch (SASS cubin per sm_XY, PTX
// per compute_XY, or one fatbin holding several), plus the list of kernels it must provide.
// Loading it on a device picks the image docs/architecture.md §5 says runs there (kiln::check_compatibility),
// loads it as a context-independent CUlibrary (cuLibraryLoadData) and resolves EVERY listed
// kernel at once: the driver accepts wrong-arch, too-new-PTX and damaged images at load and only
// reports them (209, 222, 200, 218) when a kernel is looked up, so kiln looks them all up before
// anyone can launch one. Every refusal names the kernel, the image and the CUDA error.
//
// This header needs no CUDA header: the driver handle types are declared below exactly as
// cuda.h declares them (a repeated identical typedef is legal C++).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/module.hpp>

typedef struct CUlib_st *CUlibrary;    // NOLINT: as in cuda.h
typedef struct CUkern_st *CUkernel;    // NOLINT
typedef struct CUfunc_st *CUfunction;  // NOLINT
typedef struct CUstream_st *CUstream;  // NOLINT
typedef struct CUctx_st *CUcontext;    // NOLINT

namespace kiln {

// One device image.
struct DeviceImage {
  // "cubin" (SASS for arch sm_XY[a|f]), "ptx" (for arch compute_XY[a|f]) or "fatbin"
  // (several images in one NVIDIA fat binary; its archs are `contains`, `arch` is unused).
  std::string kind;
  Arch arch;
  std::vector<Arch> contains;  // fatbin only
  std::string bytes;           // PTX: the text without a trailing NUL

  // The archs this image offers the device: {arch}, or `contains` for a fatbin.
  std::vector<Arch> offers() const;
  // "sm_90 cubin (12345 bytes)", "fatbin [sm_90,compute_90] (23456 bytes)"; no size when the
  // bytes are not held (KernelLibrary::image()).
  std::string describe() const;
};

// A device-image artifact: what load_kernels takes.
struct KernelImages {
  std::vector<DeviceImage> images;
  // Kernel names as the driver knows them (lowered / mangled names for C++ kernels, see
  // build::JitResult::kernels). Empty: every kernel the chosen image holds is resolved and
  // listed (needs a driver with cuLibraryEnumerateKernels, CUDA 12.4+).
  std::vector<std::string> kernels;
  // Optional, parallel to `kernels`: the name expressions they were compiled from ("scale<float>"
  // for "_Z5scaleIfEvPT_S0_i"); KernelLibrary::kernel() and function() accept those too.
  std::vector<std::string> name_expressions;
  // CUDA version of the toolkit that wrote the PTX images (e.g. 13000; NVRTC's version for
  // JIT builds). A driver older than this refuses the PTX (222), so such PTX is not chosen.
  // 0: unknown, not checked.
  int cuda_toolkit_version = 0;
  // What to call this set in messages ("hjcd-ik/fk"); may be empty.
  std::string label;
};

// Which image runs on a device, and why; or why none does.
struct ImageChoice {
  bool ok = false;
  std::size_t index = 0;     // into KernelImages::images (ok only)
  std::optional<Arch> arch;  // the arch the device will run (for a fatbin: the one inside it)
  std::string how;           // check_compatibility's words, plus "from fatbin [...]" for a fatbin
  std::vector<Reason> reasons;  // every refusal reason (not ok only)
};

// docs/architecture.md §5 over a set of images (pure: no driver). A separate cubin/ptx image is preferred
// over a fatbin offering the same arch (kiln then knows exactly what the driver runs).
ImageChoice choose_image(const std::vector<DeviceImage> &images, const DeviceIdentity &device,
                         int cuda_toolkit_version);

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// The kernels of one device-image artifact, loaded on one device.
//
// Owns the CUlibrary (cuLibraryUnload on destruction) and a reference on the device's primary
// context (cuDevicePrimaryCtxRetain / Release) -- the context the CUDA runtime API uses too, so a
// plugin built with the runtime API and kiln see the same device memory and streams.
// Move-only. Destroy it before the kernels' last use is over (no launch in flight uses the
// library afterwards; synchronise streams first).
class KernelLibrary {
 public:
  KernelLibrary(KernelLibrary &&) noexcept;
  KernelLibrary &operator=(KernelLibrary &&) noexcept;
  ~KernelLibrary();

  int device_ordinal() const noexcept;
  const DeviceIdentity &device() const noexcept;
  // The image chosen (kind, arch, contains; its bytes are not kept -- the driver holds its own
  // copy) and why ("exact SASS sm_90", "PTX compute_80, JIT-compiled by the driver (no SASS
  // for 9.0)").
  const DeviceImage &image() const noexcept;
  const ImageChoice &choice() const noexcept;
  const std::vector<std::string> &kernel_names() const noexcept;
  // Milliseconds spent: cuLibraryLoadData, and resolving (and loading) every kernel.
  double load_ms() const noexcept;
  double resolve_ms() const noexcept;

  // The context-independent kernel handle, by the name the driver knows (kernel_names()) or the
  // name expression it was built from (KernelImages::name_expressions). Throws NotFoundError
  // naming the kernel and the listed ones. [any-thread] No allocation, no driver call.
  CUkernel kernel(std::string_view name) const;
  // The kernel as a function of this device's primary context (cuKernelGetFunction at load,
  // loaded eagerly with cuFuncLoad where the driver has it). Same errors. [any-thread]
  CUfunction function(std::string_view name) const;
  // The primary context of this device (current after load on the loading thread).
  CUcontext context() const noexcept;
  CUlibrary handle() const noexcept;

  // cuLaunchKernel of function(name) on `stream` (nullptr: the legacy default stream of this
  // device's primary context). Makes the primary context current on the calling thread when
  // it is not (cuCtxGetCurrent / cuCtxSetCurrent). args: as cuLaunchKernel's kernelParams.
  // Throws kiln::Error naming the kernel, the device and the CUDA error. No allocation on
  // success; the driver call itself is not guaranteed real-time safe.
  void launch(std::string_view name, Dim3 grid, Dim3 block, unsigned shared_bytes,
              CUstream stream, void **args) const;

  struct State;  // defined by kiln's loader, opaque here

 private:
  friend struct KernelLibraryAccess;
  explicit KernelLibrary(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Load `images` on device `device_ordinal` (live devices only: KILN_DEVICE does not apply).
// [setup-thread] Leaves the device's primary context current on the calling thread (as
// cudaSetDevice would). Throws:
//   UsageError        bad ordinal, empty image list, a fatbin without `contains`;
//   IncompatibleError no image fits the device (reasons as check_compatibility gives them), or
//                     the driver finds no binary for the device in the chosen image (209) or
//                     refuses its PTX as too new (222) -- naming the kernel and the image;
//   IntegrityError    the chosen image's bytes are not what its kind says (checked before the
//                     driver sees them: cuLibraryLoadData has no size argument and trusts the
//                     headers), or the driver finds it invalid (200, 218);
//   NotFoundError     a listed kernel is not in the image (500);
//   Error (other)     no driver / no device / any other CUDA failure, with the driver's words.
KernelLibrary load_kernels(const KernelImages &images, int device_ordinal = 0);

struct DeviceLoadOptions {
  std::optional<int> device_ordinal;  // one device; empty: every visible device
  // false: the first device that cannot load the images throws (as load_kernels).
  // true: such devices are skipped and listed in DeviceKernels::skipped.
  bool skip_unusable = false;
};

struct SkippedDevice {
  int ordinal = 0;
  std::string device;  // "NVIDIA H200 (sm_90)"
  std::string why;     // the error's message
  ErrorKind kind = ErrorKind::other;
};

// One KernelLibrary per device, each with its own image choice (a mixed sm_80 + sm_90 box runs
// SASS on both when both cubins are present).
struct DeviceKernels {
  std::vector<KernelLibrary> libraries;  // in ordinal order
  std::vector<SkippedDevice> skipped;
  // The library for `ordinal`, or nullptr when that device was not loaded.
  const KernelLibrary *on(int ordinal) const noexcept;
};

// [setup-thread] Loads `images` on every visible device (or options.device_ordinal). Leaves the
// primary context of the last device loaded current. Throws as load_kernels; also when
// skip_unusable and no device at all could load them (the error lists every device's reason).
DeviceKernels load_for_devices(const KernelImages &images, const DeviceLoadOptions &options = {});

// Milliseconds spent in each step of Runtime::load_kernels / load_kernels_all (summed over
// devices where a step runs per device).
struct KernelLoadTimings {
  double resolve_ms = 0;  // stores, manifest, meta.json, identity.json
  double check_ms = 0;    // schemas, and which image each device runs (device discovery excluded)
  double verify_ms = 0;   // store safety; reading, digesting and validating each chosen image
                          // (a warm load of an unchanged file: one lstat, the bytes verified before)
  double load_ms = 0;     // cuLibraryLoadData
  double kernels_ms = 0;  // resolving every listed kernel (cuLibraryGetKernel, cuKernelGetFunction, cuFuncLoad)
  double total_ms() const { return resolve_ms + check_ms + verify_ms + load_ms + kernels_ms; }
};

// One device a device-image artifact was loaded on: the image it runs, and why.
struct ImageLoad {
  DeviceIdentity device;  // the live device loaded
  ArtifactImage image;    // the image file chosen
  ImageChoice choice;     // how: "exact SASS sm_90", "PTX compute_80, JIT-compiled by the driver ..."
};

struct KernelLoadReport {
  Resolution resolution;               // with its images and kernels
  std::vector<ImageLoad> loads;        // per device loaded, in ordinal order
  std::vector<SkippedDevice> skipped;  // DeviceLoadOptions::skip_unusable only
  KernelLoadTimings timings;
};

}  // namespace kiln
