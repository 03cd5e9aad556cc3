// kiln internal: packing JIT images (cubin and PTX) into one fatbin with nvFatbin.
#include "builder/backends/nvrtc/libraries.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <kiln/errors.hpp>

namespace kiln::builder {
namespace {

using NvFatbin = jit::OwnedHandle<jit::nvFatbinHandle, jit::NvFatbinResult>;

}  // namespace

std::optional<DeviceImage> NvrtcToolchain::package_fatbin(const std::vector<DeviceImage> &images) const {
  const Impl &d = *impl_;
  if (images.empty()) throw UsageError("a fatbin needs at least one image");
  for (const auto &image : images) {
    if (image.kind != "cubin" && image.kind != "ptx") {
      throw UsageError("a fatbin packs cubin and PTX images, not " + image.describe());
    }
  }
  if (!d.nvfatbin.found) return std::nullopt;

  NvFatbin fatbin{d.fat.destroy};
  const char *no_options[] = {nullptr};
  jit::NvFatbinResult status = d.fat.create(&fatbin.handle, no_options, 0);
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
      if (status != jit::kNvFatbinErrorInvalidArch) break;
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

std::optional<DeviceImage> package_fatbin(const std::vector<DeviceImage> &images) {
  return NvrtcToolchain::instance().package_fatbin(images);
}

}  // namespace kiln::builder
