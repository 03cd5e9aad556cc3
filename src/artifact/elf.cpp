#include "artifact/elf.hpp"

#include <elf.h>

#include <cstring>
#include <type_traits>

#include <kiln/errors.hpp>

namespace kiln::artifact {
namespace {

struct Elf64 {
  using Ehdr = Elf64_Ehdr;
  using Phdr = Elf64_Phdr;
  using Shdr = Elf64_Shdr;
  using Sym = Elf64_Sym;
  using Dyn = Elf64_Dyn;
  static constexpr unsigned char kClass = ELFCLASS64;
  static constexpr const char *kName = "64-bit";
  static unsigned binding(unsigned char info) { return ELF64_ST_BIND(info); }
  static unsigned type(unsigned char info) { return ELF64_ST_TYPE(info); }
};

struct Elf32 {
  using Ehdr = Elf32_Ehdr;
  using Phdr = Elf32_Phdr;
  using Shdr = Elf32_Shdr;
  using Sym = Elf32_Sym;
  using Dyn = Elf32_Dyn;
  static constexpr unsigned char kClass = ELFCLASS32;
  static constexpr const char *kName = "32-bit";
  static unsigned binding(unsigned char info) { return ELF32_ST_BIND(info); }
  static unsigned type(unsigned char info) { return ELF32_ST_TYPE(info); }
};

// Only the host's own class and byte order are parsed: anything else cannot be loaded here.
using HostElf = std::conditional_t<sizeof(void *) == 8, Elf64, Elf32>;
constexpr unsigned char kHostData = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;

std::string type_name(unsigned type) {
  switch (type) {
    case ET_REL: return "relocatable object (.o)";
    case ET_EXEC: return "executable";
    case ET_CORE: return "core dump";
    default: return "object of type " + std::to_string(type);
  }
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string &file) : bytes_(bytes), file_(file) {}

  // Whether count entries of entry_size bytes from offset lie inside the file (overflow-safe).
  bool inside(std::uint64_t offset, std::uint64_t count, std::uint64_t entry_size) const {
    const std::uint64_t size = bytes_.size();
    if (entry_size != 0 && count > size / entry_size) return false;
    return offset <= size && count * entry_size <= size - offset;
  }
  // A T at offset; the caller proved inside(offset, 1, sizeof(T)).
  template <class T>
  T at(std::uint64_t offset) const {
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof value);
    return value;
  }
  [[noreturn]] void damaged(const std::string &what) const {
    throw IntegrityError(file_ + " is truncated or damaged: " + what + " (the file has " +
                         std::to_string(bytes_.size()) + " bytes); use a complete copy of the plugin as the "
                         "linker wrote it");
  }
  std::string_view bytes() const { return bytes_; }
  const std::string &file() const { return file_; }

 private:
  std::string_view bytes_;
  const std::string &file_;
};

template <class E>
std::vector<typename E::Shdr> section_headers(const Reader &in, const typename E::Ehdr &header) {
  if (header.e_shoff == 0) {
    throw AbiError(in.file() + " has no section headers (stripped with sstrip?): kiln cannot check which symbols it "
                               "exports; publish the file as the linker wrote it (strip --strip-unneeded keeps them)");
  }
  if (header.e_shentsize != sizeof(typename E::Shdr)) {
    in.damaged("its ELF header gives " + std::to_string(header.e_shentsize) + "-byte section headers, not " +
               std::to_string(sizeof(typename E::Shdr)));
  }
  if (!in.inside(header.e_shoff, 1, sizeof(typename E::Shdr))) in.damaged("its section header table lies past the end");
  std::uint64_t count = header.e_shnum;
  if (count == 0) count = in.at<typename E::Shdr>(header.e_shoff).sh_size;  // extended numbering
  if (!in.inside(header.e_shoff, count, sizeof(typename E::Shdr))) {
    in.damaged("its " + std::to_string(count) + " section headers reach past the end");
  }
  std::vector<typename E::Shdr> sections;
  sections.reserve(count);
  for (std::uint64_t index = 0; index < count; ++index) {
    const auto section = in.at<typename E::Shdr>(header.e_shoff + index * sizeof(typename E::Shdr));
    if (section.sh_type != SHT_NOBITS && !in.inside(section.sh_offset, 1, section.sh_size)) {
      in.damaged("section " + std::to_string(index) + " (" + std::to_string(section.sh_size) + " bytes at offset " +
                 std::to_string(section.sh_offset) + ") reaches past the end");
    }
    sections.push_back(section);
  }
  return sections;
}

template <class E>
void check_program_headers(const Reader &in, const typename E::Ehdr &header) {
  if (header.e_phnum == 0) return;
  if (header.e_phentsize != sizeof(typename E::Phdr)) {
    in.damaged("its ELF header gives " + std::to_string(header.e_phentsize) + "-byte program headers, not " +
               std::to_string(sizeof(typename E::Phdr)));
  }
  if (!in.inside(header.e_phoff, header.e_phnum, sizeof(typename E::Phdr))) {
    in.damaged("its program header table reaches past the end");
  }
  for (std::uint64_t index = 0; index < header.e_phnum; ++index) {
    const auto segment = in.at<typename E::Phdr>(header.e_phoff + index * sizeof(typename E::Phdr));
    if (!in.inside(segment.p_offset, 1, segment.p_filesz)) {
      in.damaged("segment " + std::to_string(index) + " (" + std::to_string(segment.p_filesz) + " bytes at offset " +
                 std::to_string(segment.p_offset) + ") reaches past the end");
    }
  }
}

template <class E>
std::vector<ElfSymbol> dynamic_symbols(const Reader &in, const std::vector<typename E::Shdr> &sections) {
  std::vector<ElfSymbol> symbols;
  for (const auto &section : sections) {
    if (section.sh_type != SHT_DYNSYM) continue;
    if (section.sh_entsize != sizeof(typename E::Sym)) {
      in.damaged("its dynamic symbol table has " + std::to_string(section.sh_entsize) + "-byte entries");
    }
    if (section.sh_link >= sections.size() || sections[section.sh_link].sh_type != SHT_STRTAB) {
      in.damaged("its dynamic symbol table names no string table");
    }
    const auto &strings = sections[section.sh_link];  // inside the file: checked with every section
    const std::string_view names = in.bytes().substr(strings.sh_offset, strings.sh_size);
    const std::uint64_t count = section.sh_size / sizeof(typename E::Sym);
    for (std::uint64_t index = 1; index < count; ++index) {  // entry 0 is the null symbol
      const auto symbol = in.at<typename E::Sym>(section.sh_offset + index * sizeof(typename E::Sym));
      const std::size_t end = symbol.st_name < names.size() ? names.find('\0', symbol.st_name) : std::string_view::npos;
      if (end == std::string_view::npos) {
        in.damaged("the name of dynamic symbol " + std::to_string(index) + " runs past its string table");
      }
      ElfSymbol out;
      out.name = names.substr(symbol.st_name, end - symbol.st_name);
      out.binding = E::binding(symbol.st_info);
      out.type = E::type(symbol.st_info);
      out.defined = symbol.st_shndx != SHN_UNDEF;
      out.absolute = symbol.st_shndx == SHN_ABS;
      symbols.push_back(out);
    }
    break;  // one dynamic symbol table per object
  }
  return symbols;
}

// Whether a symbol table (.symtab, kept unless stripped, or .dynsym) names the CUDA runtime's
// fat binary registration: nvcc's host stubs call it for every unit with device code.
template <class E>
bool names_fatbinary_registration(const Reader &in, const std::vector<typename E::Shdr> &sections) {
  constexpr std::string_view kNames[] = {"__cudaRegisterFatBinary", "__cudaRegisterLinkedBinary"};
  for (const auto &section : sections) {
    if (section.sh_type != SHT_SYMTAB && section.sh_type != SHT_DYNSYM) continue;
    if (section.sh_entsize != sizeof(typename E::Sym) || section.sh_link >= sections.size()) continue;
    const auto &strings = sections[section.sh_link];  // inside the file: checked with every section
    if (strings.sh_type != SHT_STRTAB) continue;
    const std::string_view names = in.bytes().substr(strings.sh_offset, strings.sh_size);
    const std::uint64_t count = section.sh_size / sizeof(typename E::Sym);
    for (std::uint64_t index = 1; index < count; ++index) {
      const auto symbol = in.at<typename E::Sym>(section.sh_offset + index * sizeof(typename E::Sym));
      if (symbol.st_name >= names.size()) continue;
      const std::string_view name = names.substr(symbol.st_name);
      for (const auto wanted : kNames) {
        if (name.substr(0, wanted.size()) == wanted) return true;
      }
    }
  }
  return false;
}

template <class E>
std::uint64_t dynamic_flags_1(const Reader &in, const std::vector<typename E::Shdr> &sections) {
  for (const auto &section : sections) {
    if (section.sh_type != SHT_DYNAMIC) continue;
    const std::uint64_t count = section.sh_size / sizeof(typename E::Dyn);
    for (std::uint64_t index = 0; index < count; ++index) {
      const auto entry = in.at<typename E::Dyn>(section.sh_offset + index * sizeof(typename E::Dyn));
      if (entry.d_tag == DT_NULL) break;
      if (entry.d_tag == DT_FLAGS_1) return entry.d_un.d_val;
    }
  }
  return 0;
}

template <class E>
ElfFacts read_host_elf(const Reader &in) {
  if (!in.inside(0, 1, sizeof(typename E::Ehdr))) in.damaged("its ELF header is cut off");
  const auto header = in.at<typename E::Ehdr>(0);
  if (header.e_machine != host_elf_machine()) {
    throw AbiError(in.file() + " is built for " + elf_machine_name(header.e_machine) + " (ELF machine " +
                   std::to_string(header.e_machine) + "); this host is " + elf_machine_name(host_elf_machine()) +
                   " (ELF machine " + std::to_string(host_elf_machine()) +
                   "): build the plugin for this machine, or publish it on a machine of its kind");
  }
  if (header.e_type != ET_DYN) {
    throw AbiError(in.file() + " is an ELF " + type_name(header.e_type) +
                   ", not a shared object: link the plugin with -shared (kiln_add_plugin and recipes do)");
  }
  check_program_headers<E>(in, header);
  const auto sections = section_headers<E>(in, header);
  ElfFacts facts;
  facts.machine = header.e_machine;
  facts.dynamic_symbols = dynamic_symbols<E>(in, sections);
  facts.flags_1 = dynamic_flags_1<E>(in, sections);
  facts.registers_fatbinary = names_fatbinary_registration<E>(in, sections);
  return facts;
}

template <class E>
std::optional<std::pair<std::uint64_t, std::uint64_t>> find_section_as(const Reader &in, std::string_view name) {
  if (!in.inside(0, 1, sizeof(typename E::Ehdr))) return std::nullopt;
  const auto header = in.at<typename E::Ehdr>(0);
  if (header.e_shoff == 0 || header.e_shnum == 0 || header.e_shentsize != sizeof(typename E::Shdr) ||
      header.e_shstrndx >= header.e_shnum || !in.inside(header.e_shoff, header.e_shnum, sizeof(typename E::Shdr))) {
    return std::nullopt;
  }
  const auto section_at = [&](std::uint64_t index) {
    return in.at<typename E::Shdr>(header.e_shoff + index * sizeof(typename E::Shdr));
  };
  const auto strings = section_at(header.e_shstrndx);
  if (strings.sh_type != SHT_STRTAB || !in.inside(strings.sh_offset, 1, strings.sh_size)) return std::nullopt;
  const std::string_view names = in.bytes().substr(strings.sh_offset, strings.sh_size);
  for (std::uint64_t index = 0; index < header.e_shnum; ++index) {
    const auto section = section_at(index);
    if (section.sh_name >= names.size()) continue;
    const std::size_t end = names.find('\0', section.sh_name);
    if (end == std::string_view::npos || names.substr(section.sh_name, end - section.sh_name) != name) continue;
    if (section.sh_type == SHT_NOBITS || !in.inside(section.sh_offset, 1, section.sh_size)) return std::nullopt;
    return std::make_pair(static_cast<std::uint64_t>(section.sh_offset), static_cast<std::uint64_t>(section.sh_size));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::pair<std::uint64_t, std::uint64_t>> find_elf_section(std::string_view bytes,
                                                                       std::string_view name) noexcept {
  static const std::string unnamed;
  if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0 ||
      static_cast<unsigned char>(bytes[EI_CLASS]) != HostElf::kClass ||
      static_cast<unsigned char>(bytes[EI_DATA]) != kHostData) {
    return std::nullopt;
  }
  return find_section_as<HostElf>(Reader(bytes, unnamed), name);
}

std::uint16_t host_elf_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#elif defined(__i386__)
  return EM_386;
#elif defined(__arm__)
  return EM_ARM;
#elif defined(__powerpc64__)
  return EM_PPC64;
#elif defined(__riscv)
  return EM_RISCV;
#else
#error "kiln: name this machine's ELF e_machine in src/artifact/elf.cpp"
#endif
}

std::string elf_machine_name(std::uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "AArch64";
    case EM_386: return "i386";
    case EM_ARM: return "ARM (32-bit)";
    case EM_PPC64: return "PowerPC64";
    case EM_RISCV: return "RISC-V";
    case EM_S390: return "s390";
    default: return "machine " + std::to_string(machine);
  }
}

ElfFacts read_elf(std::string_view bytes, const std::string &file) {
  const Reader in(bytes, file);
  if (bytes.size() < SELFMAG || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    throw AbiError(file + " is not a shared object: it does not start with the ELF magic; pass the plugin .so the "
                          "build produced");
  }
  if (bytes.size() < EI_NIDENT) in.damaged("its ELF identification is cut off");
  const auto elf_class = static_cast<unsigned char>(bytes[EI_CLASS]);
  if (elf_class != HostElf::kClass) {
    throw AbiError(file + " is a " + (elf_class == ELFCLASS32 ? "32-bit" : elf_class == ELFCLASS64 ? "64-bit" : "unknown-class") +
                   " ELF object; this host (" + elf_machine_name(host_elf_machine()) + ") loads " + HostElf::kName +
                   " shared objects: build the plugin for this machine");
  }
  const auto data = static_cast<unsigned char>(bytes[EI_DATA]);
  if (data != kHostData) {
    throw AbiError(file + " is a " + (data == ELFDATA2MSB ? "big-endian" : data == ELFDATA2LSB ? "little-endian" : "unknown byte order") +
                   " ELF object; this host (" + elf_machine_name(host_elf_machine()) + ") is " +
                   (kHostData == ELFDATA2LSB ? "little-endian" : "big-endian") + ": build the plugin for this machine");
  }
  return read_host_elf<HostElf>(in);
}

}  // namespace kiln::artifact
