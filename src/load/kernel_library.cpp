// kiln: KernelLibrary and DeviceKernels (include/kiln/kernels.hpp): a loaded image's kernels
// by name, launching them in the device's context, and the libraries of several devices.
#include "load/kernel_library.hpp"

#include <string>
#include <string_view>
#include <utility>

#include <kiln/errors.hpp>

#include "device/driver.hpp"
#include "load/image_text.hpp"
#include "support/text.hpp"

namespace kiln {

std::size_t KernelLibrary::State::find(std::string_view name) const {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    if (expressions[i] == name) return i;
  }
  throw NotFoundError("kernel \"" + std::string(name) + "\" is not among the kernels loaded from " +
                      (label.empty() ? std::string("these device images") : label) + " on " +
                      load::device_text(device) + " (" + support::joined(names, ", ") + ")");
}

KernelLibrary KernelLibraryAccess::make(std::unique_ptr<KernelLibrary::State> state) {
  return KernelLibrary(std::move(state));
}

KernelLibrary::KernelLibrary(std::unique_ptr<State> state) : state_(std::move(state)) {}
KernelLibrary::KernelLibrary(KernelLibrary &&) noexcept = default;
KernelLibrary &KernelLibrary::operator=(KernelLibrary &&) noexcept = default;
KernelLibrary::~KernelLibrary() = default;

int KernelLibrary::device_ordinal() const noexcept { return state_->device.ordinal; }
const DeviceIdentity &KernelLibrary::device() const noexcept { return state_->device; }
const DeviceImage &KernelLibrary::image() const noexcept { return state_->image; }
const ImageChoice &KernelLibrary::choice() const noexcept { return state_->choice; }
const std::vector<std::string> &KernelLibrary::kernel_names() const noexcept { return state_->names; }
double KernelLibrary::load_ms() const noexcept { return state_->load_ms; }
double KernelLibrary::resolve_ms() const noexcept { return state_->resolve_ms; }
CUcontext KernelLibrary::context() const noexcept { return state_->context; }
CUlibrary KernelLibrary::handle() const noexcept { return state_->library; }

CUkernel KernelLibrary::kernel(std::string_view name) const {
  return state_->kernels[state_->find(name)];
}

CUfunction KernelLibrary::function(std::string_view name) const {
  return state_->functions[state_->find(name)];
}

void KernelLibrary::launch(std::string_view name, Dim3 grid, Dim3 block, unsigned shared_bytes,
                           CUstream stream, void **args) const {
  const State &s = *state_;
  const CUfunction function = s.functions[s.find(name)];
  CUcontext current = nullptr;
  CUresult result = s.ctx_get_current(&current);
  if (result == CUDA_SUCCESS && current != s.context) result = s.ctx_set_current(s.context);
  if (result == CUDA_SUCCESS) {
    result = s.launch_kernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                             shared_bytes, stream, args, nullptr);
  }
  if (result != CUDA_SUCCESS) {
    throw Error(ErrorKind::other, "launching kernel \"" + std::string(name) + "\" on " +
                                      load::device_text(s.device) + " failed: " +
                                      s.driver->error_text(result));
  }
}

const KernelLibrary *DeviceKernels::on(int ordinal) const noexcept {
  for (const auto &library : libraries) {
    if (library.device_ordinal() == ordinal) return &library;
  }
  return nullptr;
}

}  // namespace kiln
