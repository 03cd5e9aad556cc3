// kiln internal: checking that a device image's bytes are what its kind says (validate_image),
// before any driver reads them.
#include "load/device_images.hpp"

#include "artifact/byte_reads.hpp"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>

#include <kiln/errors.hpp>
#include <kiln/identity.hpp>

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

namespace kiln::load {

void validate_image(const DeviceImage &image) {
  const std::string name = image.describe();
  const auto corrupt = [&](const std::string &why) {
    throw IntegrityError("image " + name + " is damaged or not what its label says: " + why +
                         "; rebuild the artifact (kiln refuses it before the driver reads it)");
  };
  const std::string &bytes = image.bytes;
  if (image.kind == "cubin") {
    if (image.arch.kind != Arch::Kind::sass) {
      throw UsageError("image " + name + ": a cubin is SASS, its arch must be sm_XY, not " +
                       image.arch.to_string());
    }
    if (bytes.size() < sizeof(Elf64_Ehdr)) corrupt("shorter than an ELF header");
    if (std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) corrupt("no ELF magic (\\x7fELF)");
    if (static_cast<unsigned char>(bytes[EI_CLASS]) != ELFCLASS64) corrupt("not a 64-bit ELF object");
    if (static_cast<unsigned char>(bytes[EI_DATA]) != ELFDATA2LSB) corrupt("not a little-endian ELF object");
    const auto header = artifact::read_at<Elf64_Ehdr>(bytes, 0);
    if (header.e_machine != EM_CUDA) {
      corrupt("ELF machine " + std::to_string(header.e_machine) + ", not EM_CUDA (190)");
    }
    const std::uint64_t total = bytes.size();
    if (header.e_shnum > 0) {
      if (header.e_shentsize != sizeof(Elf64_Shdr)) corrupt("unexpected ELF section header size");
      if (!artifact::inside(header.e_shoff, std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr), total)) {
        corrupt("ELF section headers lie past the end (truncated?)");
      }
      if (header.e_shstrndx >= header.e_shnum) corrupt("ELF section name table index out of range");
      for (std::uint64_t i = 0; i < header.e_shnum; ++i) {
        const auto section = artifact::read_at<Elf64_Shdr>(bytes, header.e_shoff + i * sizeof(Elf64_Shdr));
        if (section.sh_type != SHT_NOBITS && section.sh_type != SHT_NULL &&
            !artifact::inside(section.sh_offset, section.sh_size, total)) {
          corrupt("ELF section " + std::to_string(i) + " lies past the end (truncated?)");
        }
      }
    }
    if (header.e_phnum > 0) {
      if (header.e_phentsize != sizeof(Elf64_Phdr)) corrupt("unexpected ELF program header size");
      if (!artifact::inside(header.e_phoff, std::uint64_t{header.e_phnum} * sizeof(Elf64_Phdr), total)) {
        corrupt("ELF program headers lie past the end (truncated?)");
      }
      for (std::uint64_t i = 0; i < header.e_phnum; ++i) {
        const auto segment = artifact::read_at<Elf64_Phdr>(bytes, header.e_phoff + i * sizeof(Elf64_Phdr));
        if (!artifact::inside(segment.p_offset, segment.p_filesz, total)) {
          corrupt("ELF segment " + std::to_string(i) + " lies past the end (truncated?)");
        }
      }
    }
    if (header.e_shnum == 0) corrupt("ELF object without sections");
    return;
  }
  if (image.kind == "ptx") {
    if (image.arch.kind != Arch::Kind::ptx) {
      throw UsageError("image " + name + ": PTX is for a virtual arch compute_XY, not " +
                       image.arch.to_string());
    }
    if (bytes.empty()) corrupt("empty");
    if (bytes.find('\0') != std::string::npos) corrupt("a NUL byte inside the PTX text");
    if (bytes.find(".version") == std::string::npos || bytes.find(".target") == std::string::npos) {
      corrupt("no .version / .target directive: not PTX");
    }
    return;
  }
  if (image.kind == "fatbin") {
    if (image.contains.empty()) {
      throw UsageError("image " + name + ": a fatbin must list the archs it contains");
    }
    if (bytes.size() < 16) corrupt("shorter than a fatbin header");
    if (artifact::read_at<std::uint32_t>(bytes, 0) != artifact::kFatbinMagic) corrupt("no fatbin magic (0xBA55ED50)");
    const auto header_size = artifact::read_at<std::uint16_t>(bytes, 6);
    const auto fat_size = artifact::read_at<std::uint64_t>(bytes, 8);
    if (header_size < 16 || !artifact::inside(header_size, fat_size, bytes.size())) {
      corrupt("the fatbin's declared size lies past the end (truncated?)");
    }
    return;
  }
  throw UsageError("image " + name + ": unknown kind \"" + image.kind +
                   "\" (expected cubin, ptx or fatbin)");
}

}  // namespace kiln::load
