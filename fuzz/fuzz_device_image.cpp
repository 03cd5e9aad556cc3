// Fuzz target: device-image validation (load::validate_image), the structure checks that stand
// between an image's bytes and the driver (cuLibraryLoadData trusts ELF / fatbin headers and
// reads PTX up to a NUL). The first byte picks the kind (and a fitting arch), the rest are the
// image's bytes; the seed corpus holds one real cubin, PTX and fatbin, each behind its byte.
#include "fuzz_common.hpp"

#include "load/device_images.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  kiln::DeviceImage image;
  switch (data[0] % 4) {
    case 0:
      image.kind = "cubin";
      image.arch = kiln::Arch::parse("sm_90");
      break;
    case 1:
      image.kind = "ptx";
      image.arch = kiln::Arch::parse("compute_90");
      break;
    case 2:
      image.kind = "fatbin";
      image.contains = {kiln::Arch::parse("sm_90"), kiln::Arch::parse("compute_90")};
      break;
    default:  // a kind that contradicts its arch: refused before any byte is read
      image.kind = (data[0] & 4) != 0 ? "cubin" : "ptx";
      image.arch = kiln::Arch::parse((data[0] & 4) != 0 ? "compute_90" : "sm_90");
      break;
  }
  image.bytes = kiln::fuzz::text_of(data + 1, size - 1);
  return kiln::fuzz::run([&] {
    kiln::load::validate_image(image);
    (void)image.describe();
  });
}
