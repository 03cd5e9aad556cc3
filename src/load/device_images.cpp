// kiln: loading device images through the driver -- the chosen image of a set on one device,
// or on every device (KernelLibrary, DeviceKernels in include/kiln/kernels.hpp).
#include "load/device_images.hpp"

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/identity.hpp>

#include "device/discover.hpp"
#include "device/driver.hpp"
#include "load/image_text.hpp"
#include "load/kernel_library.hpp"
#include "support/elapsed.hpp"
#include "support/text.hpp"

namespace kiln {
namespace load {
namespace {

using support::joined;
using support::ms_since;

std::string set_text(const KernelImages &images) {
  return images.label.empty() ? std::string("device images") : "device images " + images.label;
}

// A failed driver call while loading or resolving: the typed error docs/architecture.md §2.2 asks for.
[[noreturn]] void refuse(const KernelLibrary::State &s, const std::string &what, CUresult result,
                         int toolkit_version) {
  std::string error = s.driver->error_text(result);
  const std::string log = s.jit_log.empty() ? std::string()
                                            : std::string(s.jit_log.data(), ::strnlen(s.jit_log.data(), s.jit_log.size()));
  if (!log.empty()) error += "; JIT log: " + log;
  const std::string &image = s.image_text;
  switch (static_cast<int>(result)) {
    case 209:  // CUDA_ERROR_NO_BINARY_FOR_GPU
      throw IncompatibleError(
          what, {{"cuda_arch", s.image.kind == "fatbin" ? arch_list(s.image.contains) : s.image.arch.to_string(),
                  s.device.arch_name(),
                  "the driver finds no code for this GPU in image " + image + ": " + error +
                      "; the image is mislabelled or damaged; rebuild the artifact"}});
    case 222:  // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
      throw IncompatibleError(
          what, {{"driver_version", toolkit_version > 0 ? std::to_string(toolkit_version) : "unknown",
                  std::to_string(s.device.driver_version),
                  "the driver refuses image " + image + " as written by a newer CUDA than itself: " +
                      error + "; update the driver" +
                      (s.image.kind == "ptx" ? ", or ship SASS for " + s.device.arch_name()
                                             : ", or rebuild with a toolkit no newer than the driver")}});
    case 200:  // CUDA_ERROR_INVALID_IMAGE
    case 218:  // CUDA_ERROR_INVALID_PTX
    case 300:  // CUDA_ERROR_INVALID_SOURCE
      throw IntegrityError(what + ": the driver finds image " + image + " invalid: " + error +
                           "; the image is damaged or not what its label says; rebuild the artifact");
    case 500:  // CUDA_ERROR_NOT_FOUND
      throw NotFoundError(what + ": image " + image + " has no such kernel: " + error +
                          "; list kernels by the name the driver knows (extern \"C\" names, or "
                          "the lowered names the JIT build records)");
    default:
      throw Error(ErrorKind::other, what + " (image " + image + "): " + error);
  }
}

template <class Fn>
Fn need(device::Driver &driver, const char *name) {
  auto fn = driver.proc_as<Fn>(name);
  if (fn == nullptr) {
    throw Error(ErrorKind::other,
                "the CUDA driver " + device::driver_version_text(driver.driver_version()) + " (" +
                    driver.library() + ") offers no " + name +
                    ": loading device images needs a CUDA 12.0 or newer driver; update the NVIDIA driver");
  }
  return fn;
}

}  // namespace

KernelLibrary load_kernels(device::Driver &driver, const KernelImages &images, int device_ordinal) {
  const std::string set = set_text(images);
  if (images.images.empty()) throw UsageError(set + ": no image to load");
  if (!driver.ok()) {
    throw Error(ErrorKind::other, "cannot load " + set + ": " + driver.detail());
  }
  if (device_ordinal < 0 || device_ordinal >= driver.device_count()) {
    throw UsageError("cannot load " + set + " on device " + std::to_string(device_ordinal) +
                     ": the driver sees " + std::to_string(driver.device_count()) +
                     (driver.device_count() == 1 ? " device" : " devices") + " (ordinals from 0)");
  }
  const DeviceReport report = device::discover(driver, std::nullopt);
  if (report.state != DriverState::ok || static_cast<std::size_t>(device_ordinal) >= report.devices.size()) {
    throw Error(ErrorKind::other, "cannot load " + set + ": " + report.detail);
  }
  const DeviceIdentity &device = report.devices[static_cast<std::size_t>(device_ordinal)];

  // 1. Which image (pure), and are its bytes what it says (pure).
  ImageChoice choice = choose_image(images.images, device, images.cuda_toolkit_version);
  if (!choice.ok) {
    std::string offered;
    for (const auto &image : images.images) offered += (offered.empty() ? "" : ", ") + image.describe();
    throw IncompatibleError(set + " [" + offered + "] cannot run on " + device_text(device),
                            choice.reasons);
  }
  validate_image(images.images[choice.index]);
  return load_chosen(driver, images, device, choice);
}

KernelLibrary load_chosen(device::Driver &driver, const KernelImages &images, const DeviceIdentity &device,
                          const ImageChoice &choice) {
  const std::string set = set_text(images);
  if (!driver.ok()) throw Error(ErrorKind::other, "cannot load " + set + ": " + driver.detail());
  const int device_ordinal = device.ordinal;
  const DeviceImage &chosen = images.images.at(choice.index);

  // 2. The driver entry points (all through cuGetProcAddress).
  auto state = std::make_unique<KernelLibrary::State>();
  KernelLibrary::State &s = *state;
  s.driver = &driver;
  s.device = device;
  s.choice = choice;
  s.label = images.label;
  s.image.kind = chosen.kind;
  s.image.arch = chosen.arch;
  s.image.contains = chosen.contains;
  s.image_text = chosen.describe();
  s.library_unload = need<decltype(&::cuLibraryUnload)>(driver, "cuLibraryUnload");
  s.primary_release = need<decltype(&::cuDevicePrimaryCtxRelease)>(driver, "cuDevicePrimaryCtxRelease");
  s.ctx_get_current = need<decltype(&::cuCtxGetCurrent)>(driver, "cuCtxGetCurrent");
  s.ctx_set_current = need<decltype(&::cuCtxSetCurrent)>(driver, "cuCtxSetCurrent");
  s.launch_kernel = need<decltype(&::cuLaunchKernel)>(driver, "cuLaunchKernel");
  const auto primary_retain = need<decltype(&::cuDevicePrimaryCtxRetain)>(driver, "cuDevicePrimaryCtxRetain");
  const auto library_load = need<decltype(&::cuLibraryLoadData)>(driver, "cuLibraryLoadData");
  const auto get_kernel = need<decltype(&::cuLibraryGetKernel)>(driver, "cuLibraryGetKernel");
  const auto get_function = need<decltype(&::cuKernelGetFunction)>(driver, "cuKernelGetFunction");
  const auto func_load = driver.proc_as<decltype(&::cuFuncLoad)>("cuFuncLoad");  // 12.4+, optional

  const std::string on = " on " + device_text(device);
  const std::string image_text = "image " + chosen.describe() + " of " + set;

  // 3. The device's primary context, current on this thread.
  CUresult result = driver.api().device_get(&s.cu_device, device_ordinal);
  if (result != CUDA_SUCCESS) refuse(s, "cuDeviceGet(" + std::to_string(device_ordinal) + ")", result, 0);
  result = primary_retain(&s.context, s.cu_device);
  if (result != CUDA_SUCCESS) refuse(s, "retaining the primary context of " + device_text(device), result, 0);
  s.retained = true;
  if (s.ctx_get_current(&s.previous) == CUDA_SUCCESS) s.restore_previous = true;
  result = s.ctx_set_current(s.context);
  if (result != CUDA_SUCCESS) refuse(s, "making the primary context of " + device_text(device) + " current", result, 0);

  // 4. Load. The driver accepts wrong-arch, too-new and damaged images here; step 5 finds out.
  // A PTX JIT error log only where the driver may JIT (PTX, or a fatbin that may hold PTX).
  const unsigned jit_option_count = chosen.kind == "cubin" ? 0 : 2;
  if (jit_option_count != 0) s.jit_log.assign(4096, '\0');
  CUjit_option jit_options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *jit_values[] = {s.jit_log.data(), reinterpret_cast<void *>(static_cast<std::uintptr_t>(s.jit_log.size()))};
  const auto load_started = std::chrono::steady_clock::now();
  result = library_load(&s.library, chosen.bytes.c_str(), jit_option_count != 0 ? jit_options : nullptr,
                        jit_option_count != 0 ? jit_values : nullptr, jit_option_count, nullptr, nullptr, 0);
  s.load_ms = ms_since(load_started);
  if (result != CUDA_SUCCESS) {
    s.library = nullptr;
    refuse(s, "loading " + image_text + " (kernels: " + joined(images.kernels, ", ") + ")" + on, result,
           images.cuda_toolkit_version);
  }

  // 5. Resolve every kernel now, in this device's context, and finish loading each.
  const auto resolve_started = std::chrono::steady_clock::now();
  s.names = images.kernels;
  if (images.name_expressions.size() == images.kernels.size()) s.expressions = images.name_expressions;
  if (s.names.empty()) {
    const auto count_kernels = driver.proc_as<decltype(&::cuLibraryGetKernelCount)>("cuLibraryGetKernelCount");
    const auto enumerate = driver.proc_as<decltype(&::cuLibraryEnumerateKernels)>("cuLibraryEnumerateKernels");
    const auto kernel_name = driver.proc_as<decltype(&::cuKernelGetName)>("cuKernelGetName");
    if (count_kernels == nullptr || enumerate == nullptr || kernel_name == nullptr) {
      throw UsageError(set + " lists no kernels and this driver cannot enumerate them (needs CUDA "
                             "12.4+); list the kernels to resolve");
    }
    unsigned count = 0;
    result = count_kernels(&count, s.library);
    if (result != CUDA_SUCCESS) refuse(s, "counting the kernels of " + image_text + on, result, images.cuda_toolkit_version);
    std::vector<CUkernel> all(count);
    if (count > 0) {
      result = enumerate(all.data(), count, s.library);
      if (result != CUDA_SUCCESS) refuse(s, "enumerating the kernels of " + image_text + on, result, images.cuda_toolkit_version);
    }
    for (CUkernel kernel : all) {
      const char *name = nullptr;
      result = kernel_name(&name, kernel);
      if (result != CUDA_SUCCESS || name == nullptr) {
        refuse(s, "naming a kernel of " + image_text + on, result, images.cuda_toolkit_version);
      }
      s.names.emplace_back(name);
    }
    if (s.names.empty()) throw UsageError(set + ": image " + chosen.describe() + " holds no kernel");
  }
  for (const auto &name : s.names) {
    const std::string what = "kernel \"" + name + "\" of " + image_text + on;
    CUkernel kernel = nullptr;
    result = get_kernel(&kernel, s.library, name.c_str());
    if (result != CUDA_SUCCESS) refuse(s, what, result, images.cuda_toolkit_version);
    CUfunction function = nullptr;
    result = get_function(&function, kernel);
    if (result != CUDA_SUCCESS) refuse(s, what, result, images.cuda_toolkit_version);
    if (func_load != nullptr) {
      result = func_load(function);
      if (result != CUDA_SUCCESS) refuse(s, what, result, images.cuda_toolkit_version);
    }
    s.kernels.push_back(kernel);
    s.functions.push_back(function);
  }
  s.resolve_ms = ms_since(resolve_started);
  s.restore_previous = false;  // loaded: the device's primary context stays current
  return KernelLibraryAccess::make(std::move(state));
}

DeviceKernels load_on_each(const std::vector<int> &ordinals, bool skip_unusable, const std::string &what,
                           const std::function<KernelLibrary(int)> &load_one,
                           const std::function<std::string(int)> &device_label) {
  DeviceKernels out;
  for (int ordinal : ordinals) {
    try {
      out.libraries.push_back(load_one(ordinal));
    } catch (const Error &error) {
      if (!skip_unusable || error.kind() == ErrorKind::usage) throw;
      SkippedDevice skipped;
      skipped.ordinal = ordinal;
      skipped.device = device_label(ordinal);
      skipped.why = error.what();
      skipped.kind = error.kind();
      out.skipped.push_back(std::move(skipped));
    }
  }
  if (out.libraries.empty() && !out.skipped.empty()) {
    std::string why;
    for (const auto &skipped : out.skipped) why += (why.empty() ? "" : "; ") + skipped.why;
    throw Error(out.skipped.front().kind, "no device can load " + what + ": " + why);
  }
  return out;
}

DeviceKernels load_for_devices(device::Driver &driver, const KernelImages &images,
                               const DeviceLoadOptions &options) {
  const std::string set = set_text(images);
  if (!driver.ok()) throw Error(ErrorKind::other, "cannot load " + set + ": " + driver.detail());
  std::vector<int> ordinals;
  if (options.device_ordinal) {
    ordinals.push_back(*options.device_ordinal);
  } else {
    for (int i = 0; i < driver.device_count(); ++i) ordinals.push_back(i);
  }
  return load_on_each(
      ordinals, options.skip_unusable, set, [&](int ordinal) { return load_kernels(driver, images, ordinal); },
      [&](int ordinal) {
        const DeviceReport report = device::discover(driver, std::nullopt);
        return static_cast<std::size_t>(ordinal) < report.devices.size()
                   ? device_text(report.devices[static_cast<std::size_t>(ordinal)])
                   : "device " + std::to_string(ordinal);
      });
}

}  // namespace load

KernelLibrary load_kernels(const KernelImages &images, int device_ordinal) {
  return load::load_kernels(device::Driver::instance(), images, device_ordinal);
}

DeviceKernels load_for_devices(const KernelImages &images, const DeviceLoadOptions &options) {
  return load::load_for_devices(device::Driver::instance(), images, options);
}

}  // namespace kiln
