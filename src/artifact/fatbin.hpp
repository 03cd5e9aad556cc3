// What device code a plugin file holds, read from its bytes: the NVIDIA fat binaries nvcc links
// into the `.nv_fatbin` section, one container per compiled unit. Each container (magic
// 0xBA55ED50, 16-byte header, then its entries) lists entries of kind PTX or ELF (a cubin)
// with the arch they were compiled for and flags (compressed; 'a' arch-specific, 'f' family).
// An uncompressed cubin's own ELF header (EM_CUDA, e_flags) is read too and must name the
// same SM as its entry; a zstd-compressed one is inflated only as far as that header.
// The bytes are untrusted: every offset and size is checked against the section before it is
// followed, and anything malformed is an IntegrityError naming the file, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/identity.hpp>

#include "artifact/elf.hpp"

namespace kiln::artifact {

struct FatbinEntry {
  Arch arch;                      // sm_XY[a|f] for an ELF entry, compute_XY[a|f] for PTX
  bool compressed = false;
  std::uint64_t offset = 0;       // of the entry's header, within the section
  std::uint64_t payload_size = 0; // bytes stored after its header
  int elf_sm = 0;                 // the SM its cubin's ELF header names; 0: PTX
};

// Every entry of the fat binaries in `section` (the contents of a `.nv_fatbin`). Entries of a
// kind kiln does not run (neither PTX nor ELF, e.g. LTO IR) are skipped. IntegrityError naming
// `file` for a container or entry that is cut off, overlaps the next, or contradicts itself.
std::vector<FatbinEntry> read_fatbin(std::string_view section, const std::string &file);

// What a plugin file holds for the GPU.
struct DeviceCode {
  bool fatbin_section = false;       // a .nv_fatbin section is present
  bool registers_fatbinary = false;  // it names __cudaRegisterFatBinary / __cudaRegisterLinkedBinary
  std::vector<FatbinEntry> entries;
  // The distinct archs of the entries, SASS first, each group in ascending order.
  std::vector<Arch> archs() const;
  bool any() const { return fatbin_section || registers_fatbinary; }
};

// The device code of a shared object read_elf accepted (`elf` its facts).
DeviceCode read_device_code(std::string_view bytes, const ElfFacts &elf, const std::string &file);

// "SASS sm_80, sm_90; PTX compute_90", or "no device code".
std::string describe_archs(const std::vector<Arch> &archs);

}  // namespace kiln::artifact
