// kiln: what a device image offers, and which image of a set runs on a device (choose_image).
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/identity.hpp>
#include <kiln/kernels.hpp>

#include "load/image_text.hpp"

namespace kiln {

// --- DeviceImage ------------------------------------------------------------------------------

std::vector<Arch> DeviceImage::offers() const {
  if (kind == "fatbin") return contains;
  return {arch};
}

std::string DeviceImage::describe() const {
  const std::string size = bytes.empty() ? std::string() : " (" + std::to_string(bytes.size()) + " bytes)";
  if (kind == "fatbin") return "fatbin [" + load::arch_list(contains) + "]" + size;
  return arch.to_string() + " " + (kind.empty() ? std::string("image") : kind) + size;
}

// --- choice -----------------------------------------------------------------------------------

ImageChoice choose_image(const std::vector<DeviceImage> &images, const DeviceIdentity &device,
                         int cuda_toolkit_version) {
  ImageChoice choice;
  const auto host = HostRequirements::current();
  ArtifactIdentity artifact;
  artifact.key_schema = host.key_schema;
  artifact.artifact_schema = host.artifact_schema;
  artifact.abi_version = 0;  // device images: no plugin ABI
  artifact.cuda_toolkit_version = cuda_toolkit_version;
  for (const auto &image : images) {
    if (image.kind == "fatbin" && image.contains.empty()) {
      throw UsageError("a fatbin image must list the archs it contains (DeviceImage::contains)");
    }
    for (const auto &arch : image.offers()) {
      if (std::find(artifact.archs.begin(), artifact.archs.end(), arch) == artifact.archs.end()) {
        artifact.archs.push_back(arch);
      }
    }
  }
  if (artifact.archs.empty()) {
    choice.reasons.push_back({"cuda_arch", "", device.arch_name(),
                              "the artifact has no device image; rebuild with --arch " +
                                  device.arch_name()});
    return choice;
  }
  const Compatibility result = check_compatibility(artifact, host, &device);
  if (!result.ok || !result.image) {
    choice.reasons = result.reasons;
    return choice;
  }
  const Arch chosen = *result.image;
  std::optional<std::size_t> fatbin;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto &image = images[i];
    if (image.kind != "fatbin" && image.arch == chosen) {
      choice.ok = true;
      choice.index = i;
      choice.arch = chosen;
      choice.how = result.how;
      return choice;
    }
    if (image.kind == "fatbin" && !fatbin) {
      const auto offers = image.offers();
      if (std::find(offers.begin(), offers.end(), chosen) != offers.end()) fatbin = i;
    }
  }
  choice.ok = true;
  choice.index = *fatbin;  // the arch came from some image: a fatbin when no single one
  choice.arch = chosen;
  choice.how = result.how + ", from fatbin [" + load::arch_list(images[*fatbin].contains) +
               "] (the driver picks inside it)";
  return choice;
}

}  // namespace kiln
