// kiln internal: device images (include/kiln/kernels.hpp): checking their bytes
// (image_validation.cpp) and loading them against a given driver (device_images.cpp).
//
// The public load_kernels / load_for_devices use device::Driver::instance(); tests and the
// runtime may pass their own driver. Every driver call goes through Driver::proc.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <kiln/kernels.hpp>

namespace kiln {
namespace device {
class Driver;
}

namespace load {

// Checks, without any driver, that an image's bytes are what its kind says, so the driver is
// never handed something it would read past (cuLibraryLoadData takes no size: it trusts the
// ELF / fatbin headers and reads PTX up to a NUL):
//   cubin:  an ELF64 little-endian object for EM_CUDA whose header, program headers and every
//           section lie inside the bytes; arch must be sm_XY[a|f];
//   ptx:    text without NUL bytes that has .version and .target directives; arch compute_XY;
//   fatbin: NVIDIA fat binary magic 0xBA55ED50 with its declared size inside the bytes, and a
//           non-empty `contains`.
// Throws IntegrityError naming the image and what is wrong with its bytes, UsageError for an
// unknown kind or an arch that contradicts the kind.
void validate_image(const DeviceImage &image);

KernelLibrary load_kernels(device::Driver &driver, const KernelImages &images, int device_ordinal);

// The loading half of load_kernels for a choice already made and an image already validated:
// images.images[choice.index] on `device` (a live device of `driver`, as discover() describes
// it; device.ordinal is the driver's ordinal). No discovery, no choice, no validation.
KernelLibrary load_chosen(device::Driver &driver, const KernelImages &images, const DeviceIdentity &device,
                          const ImageChoice &choice);
DeviceKernels load_for_devices(device::Driver &driver, const KernelImages &images,
                               const DeviceLoadOptions &options);

// One image set on several devices, the rule both load_for_devices and the runtime's stored
// images follow: load_one(ordinal) for each ordinal in order. With skip_unusable, a device whose
// load throws anything but a UsageError is recorded in DeviceKernels::skipped (named by
// device_label(ordinal), with the error's text and kind) and the others go on; when no device
// loaded, the first skip's kind is thrown with every device's reason ("no device can load
// <what>: ..."). Without skip_unusable the first error propagates.
DeviceKernels load_on_each(const std::vector<int> &ordinals, bool skip_unusable, const std::string &what,
                           const std::function<KernelLibrary(int)> &load_one,
                           const std::function<std::string(int)> &device_label);

}  // namespace load
}  // namespace kiln
