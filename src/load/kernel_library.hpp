// kiln internal: what a KernelLibrary (include/kiln/kernels.hpp) holds; the loader
// (device_images.cpp) fills it, kernel_library.cpp answers from it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/kernels.hpp>

namespace kiln {
namespace device {
class Driver;
}

// The loader's way to make a KernelLibrary, whose constructor is private.
struct KernelLibraryAccess {
  static KernelLibrary make(std::unique_ptr<KernelLibrary::State> state);
};

struct KernelLibrary::State {
  device::Driver *driver = nullptr;
  DeviceIdentity device;
  CUdevice cu_device = 0;
  CUcontext context = nullptr;
  bool retained = false;
  CUlibrary library = nullptr;
  DeviceImage image;  // the chosen image without its bytes (the driver keeps its own copy)
  std::string image_text;  // its describe(), with the size it had
  ImageChoice choice;
  std::string label;
  std::vector<std::string> names;
  std::vector<std::string> expressions;  // parallel to names, or empty
  std::vector<CUkernel> kernels;
  std::vector<CUfunction> functions;
  double load_ms = 0;
  double resolve_ms = 0;
  std::vector<char> jit_log;  // PTX JIT error log; the driver may write it until unload
  // While loading: the thread's context before ours, put back if the load fails.
  CUcontext previous = nullptr;
  bool restore_previous = false;

  decltype(&::cuLibraryUnload) library_unload = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_release = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;

  State() = default;
  State(const State &) = delete;
  State &operator=(const State &) = delete;
  ~State() {
    if (library != nullptr && library_unload != nullptr) library_unload(library);
    if (restore_previous && ctx_set_current != nullptr) ctx_set_current(previous);
    if (retained && primary_release != nullptr) primary_release(cu_device);
  }

  // The index of a kernel by the name the driver knows or its name expression; NotFoundError
  // naming what was loaded otherwise.
  std::size_t find(std::string_view name) const;
};

}  // namespace kiln
