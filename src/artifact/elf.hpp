// The ELF facts kiln checks before any plugin code runs: that a file is a whole shared object
// for this machine, which dynamic symbols it exports and how its dynamic section flags it.
// Reads bytes already in memory (never maps, never runs the file); every offset and count is
// checked against the file's size before it is followed, so hostile bytes cannot read past them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::artifact {

struct ElfSymbol {
  std::string_view name;  // points into the bytes given to read_elf
  unsigned binding = 0;   // STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE
  unsigned type = 0;      // STT_FUNC, STT_OBJECT, ...
  bool defined = false;   // st_shndx != SHN_UNDEF
  bool absolute = false;  // st_shndx == SHN_ABS (version nodes: neither code nor data)
};

struct ElfFacts {
  std::uint16_t machine = 0;
  std::vector<ElfSymbol> dynamic_symbols;  // .dynsym without its null entry
  std::uint64_t flags_1 = 0;               // DT_FLAGS_1 (DF_1_NODELETE, ...); 0 when absent
  // A symbol of .symtab or .dynsym is __cudaRegisterFatBinary* or __cudaRegisterLinkedBinary*:
  // the file hands device code to the CUDA runtime when it loads.
  bool registers_fatbinary = false;
};

// Parses `bytes` as a shared object of this host's class, byte order and machine. Throws
// AbiError naming `file` when it is not ELF, is of another class/byte order/machine (naming
// both machines) or is not a shared object; IntegrityError when a header, table or string
// reaches past the end of the file (truncated or damaged).
ElfFacts read_elf(std::string_view bytes, const std::string &file);

// Where the section called `name` lies in the file ({offset, size}), found through the section
// headers alone (a few reads instead of a search through every byte). nullopt when the bytes
// are not a well-formed ELF object of this host's class and byte order or hold no such section.
// Never throws: it only speeds up what a full search would find.
std::optional<std::pair<std::uint64_t, std::uint64_t>> find_elf_section(std::string_view bytes,
                                                                       std::string_view name) noexcept;

// "x86-64", "AArch64", ... or "machine <n>" for the e_machine values kiln does not name.
std::string elf_machine_name(std::uint16_t machine);
// The e_machine of the code this kiln was compiled to (what dlopen here accepts).
std::uint16_t host_elf_machine();

}  // namespace kiln::artifact
