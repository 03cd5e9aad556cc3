#include "artifact/fatbin.hpp"

#include "artifact/byte_reads.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include <archive.h>

#include <kiln/errors.hpp>

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

namespace kiln::artifact {
namespace {

// The container and entry layouts as nvcc (CUDA 11-13) writes them, little-endian. Only the
// fields kiln reads are named; an entry header may be longer (PTX and newer ELF entries carry
// options after these 64 bytes) and says how long it is.
constexpr std::uint64_t kContainerHeaderSize = 16;  // magic u32, version u16, header size u16, fat size u64
constexpr std::uint64_t kEntryHeaderMin = 64;
constexpr std::uint64_t kEntryHeaderMax = 4096;     // far above any nvcc writes: a bound, not a format rule
constexpr std::uint64_t kEntryKindAt = 0;           // u16: 1 PTX, 2 ELF
constexpr std::uint64_t kEntryHeaderSizeAt = 4;     // u32
constexpr std::uint64_t kEntryPayloadSizeAt = 8;    // u64, padded to 8 bytes
constexpr std::uint64_t kEntryCompressedSizeAt = 16; // u32: the compressed bytes, without that padding
constexpr std::uint64_t kEntryArchAt = 28;          // u32: 90 for sm_90 / compute_90
constexpr std::uint64_t kEntryFlagsAt = 40;         // u64
constexpr std::uint16_t kKindPtx = 1;
constexpr std::uint16_t kKindElf = 2;
constexpr std::uint64_t kFlagCompressedLz4 = 0x2000;
constexpr std::uint64_t kFlagCompressedZstd = 0x8000;
constexpr std::uint64_t kFlagArchSpecific = 0x100000;  // sm_90a, compute_90a
constexpr std::uint64_t kFlagFamily = 0x200000;        // sm_100f, compute_100f

class Damage {
 public:
  explicit Damage(const std::string &file) : file_(file) {}
  [[noreturn]] void operator()(std::uint64_t at, const std::string &what) const {
    throw IntegrityError(file_ + " has a damaged CUDA fat binary (.nv_fatbin, at byte " + std::to_string(at) +
                         " of the section): " + what +
                         "; kiln cannot tell which GPUs its device code runs on: use the file as nvcc linked it");
  }

 private:
  const std::string &file_;
};

struct ArchiveFree {
  void operator()(archive *handle) const noexcept { archive_read_free(handle); }
};

// The first `want` bytes a zstd frame inflates to (fewer when it is shorter); nullopt when the
// bytes are no zstd frame. Only `want` bytes are ever produced: a bomb costs nothing.
std::optional<std::string> zstd_prefix(std::string_view frame, std::size_t want) {
  std::unique_ptr<archive, ArchiveFree> reader(archive_read_new());
  if (!reader) throw std::bad_alloc();
  archive_entry *entry = nullptr;
  if (archive_read_support_filter_zstd(reader.get()) != ARCHIVE_OK ||
      archive_read_support_format_raw(reader.get()) != ARCHIVE_OK ||
      archive_read_open_memory(reader.get(), frame.data(), frame.size()) != ARCHIVE_OK ||
      archive_filter_code(reader.get(), 0) != ARCHIVE_FILTER_ZSTD ||
      archive_read_next_header(reader.get(), &entry) != ARCHIVE_OK) {
    return std::nullopt;
  }
  std::string out(want, '\0');
  std::size_t got = 0;
  while (got < want) {
    const la_ssize_t n = archive_read_data(reader.get(), out.data() + got, want - got);
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

// The SM a cubin's ELF header names: e_flags bits 8-15 from ELF ABI version 8 (CUDA 12.8 on),
// bits 0-7 before.
int cubin_sm(std::string_view header, std::uint64_t at, const Damage &damaged) {
  if (header.size() < sizeof(Elf64_Ehdr) || std::memcmp(header.data(), ELFMAG, SELFMAG) != 0 ||
      static_cast<unsigned char>(header[EI_CLASS]) != ELFCLASS64 ||
      static_cast<unsigned char>(header[EI_DATA]) != ELFDATA2LSB) {
    damaged(at, "an ELF entry does not hold a 64-bit little-endian ELF object");
  }
  const auto elf = read_at<Elf64_Ehdr>(header, 0);
  if (elf.e_machine != EM_CUDA) {
    damaged(at, "an ELF entry's object is for ELF machine " + std::to_string(elf.e_machine) + ", not EM_CUDA (190)");
  }
  const bool v8 = static_cast<unsigned char>(header[EI_ABIVERSION]) >= 8;
  return static_cast<int>(v8 ? (elf.e_flags >> 8) & 0xff : elf.e_flags & 0xff);
}

FatbinEntry read_entry(std::string_view section, std::uint64_t at, std::uint64_t end, const Damage &damaged,
                       bool &runnable) {
  if (!inside(at, kEntryHeaderMin, end)) damaged(at, "an entry header is cut off by its container's end");
  const auto header_size = read_at<std::uint32_t>(section, at + kEntryHeaderSizeAt);
  const auto payload_size = read_at<std::uint64_t>(section, at + kEntryPayloadSizeAt);
  if (header_size < kEntryHeaderMin || header_size > kEntryHeaderMax || !inside(at, header_size, end)) {
    damaged(at, "an entry header claims " + std::to_string(header_size) + " bytes");
  }
  if (!inside(at + header_size, payload_size, end)) {
    damaged(at, "an entry of " + std::to_string(payload_size) + " bytes reaches past its container's end");
  }
  const auto kind = read_at<std::uint16_t>(section, at + kEntryKindAt);
  const auto number = read_at<std::uint32_t>(section, at + kEntryArchAt);
  const auto flags = read_at<std::uint64_t>(section, at + kEntryFlagsAt);
  FatbinEntry entry;
  entry.offset = at;
  entry.payload_size = payload_size;
  entry.compressed = (flags & (kFlagCompressedLz4 | kFlagCompressedZstd)) != 0;
  runnable = kind == kKindPtx || kind == kKindElf;
  if (!runnable) return entry;
  if (number < 10 || number > 999) damaged(at, "an entry names arch " + std::to_string(number));
  if ((flags & kFlagArchSpecific) != 0 && (flags & kFlagFamily) != 0) {
    damaged(at, "an entry is flagged both arch-specific and family-specific");
  }
  entry.arch.kind = kind == kKindPtx ? Arch::Kind::ptx : Arch::Kind::sass;
  entry.arch.major = static_cast<int>(number / 10);
  entry.arch.minor = static_cast<int>(number % 10);
  entry.arch.suffix = (flags & kFlagArchSpecific) != 0 ? 'a' : (flags & kFlagFamily) != 0 ? 'f' : '\0';
  if (kind != kKindElf) return entry;

  // The cubin's own header must agree with the entry. LZ4 (older nvcc) is not inflated: its
  // entry header alone names the arch.
  const std::string_view payload = section.substr(at + header_size, payload_size);
  std::optional<std::string> inflated;
  std::string_view elf_header = payload;
  if ((flags & kFlagCompressedZstd) != 0) {
    // The frame alone: zstd would read the padding after it as the start of another frame.
    const auto compressed_size = read_at<std::uint32_t>(section, at + kEntryCompressedSizeAt);
    if (compressed_size == 0 || compressed_size > payload_size) {
      damaged(at, "a compressed entry claims " + std::to_string(compressed_size) + " compressed bytes in " +
                      std::to_string(payload_size));
    }
    inflated = zstd_prefix(payload.substr(0, compressed_size), sizeof(Elf64_Ehdr));
    if (!inflated) damaged(at, "a compressed " + entry.arch.to_string() + " entry is no zstd frame");
    elf_header = *inflated;
  } else if ((flags & kFlagCompressedLz4) != 0) {
    return entry;
  }
  entry.elf_sm = cubin_sm(elf_header, at, damaged);
  if (entry.elf_sm != static_cast<int>(number)) {
    damaged(at, "an entry labelled " + entry.arch.to_string() + " holds a cubin whose ELF header names sm_" +
                    std::to_string(entry.elf_sm));
  }
  return entry;
}

// Every container of the section and every entry of each.
std::vector<FatbinEntry> read_containers(std::string_view section, const std::string &file) {
  const Damage damaged(file);
  std::vector<FatbinEntry> entries;
  std::uint64_t at = 0;
  const std::uint64_t size = section.size();
  while (at < size) {
    // The linker aligns each unit's container; what lies between them is zero padding.
    if (size - at < kContainerHeaderSize) {
      if (section.substr(at).find_first_not_of('\0') != std::string_view::npos) {
        damaged(at, "it ends in " + std::to_string(size - at) + " bytes that are no container");
      }
      break;
    }
    const auto magic = read_at<std::uint32_t>(section, at);
    if (magic == 0 && read_at<std::uint64_t>(section, at) == 0) {
      at += 8;
      continue;
    }
    if (magic != kFatbinMagic) damaged(at, "no fat binary magic (0xBA55ED50) where a container should start");
    const auto header_size = read_at<std::uint16_t>(section, at + 6);
    const auto fat_size = read_at<std::uint64_t>(section, at + 8);
    if (header_size < kContainerHeaderSize || !inside(at, header_size, size) ||
        !inside(at + header_size, fat_size, size)) {
      damaged(at, "a container of " + std::to_string(fat_size) + " bytes reaches past the section's end");
    }
    const std::uint64_t end = at + header_size + fat_size;
    std::uint64_t next = at + header_size;
    while (next < end) {
      bool runnable = false;
      FatbinEntry entry = read_entry(section, next, end, damaged, runnable);
      next += read_at<std::uint32_t>(section, next + kEntryHeaderSizeAt) + entry.payload_size;
      if (runnable) entries.push_back(entry);
    }
    at = end;
  }
  return entries;
}

}  // namespace

std::vector<FatbinEntry> read_fatbin(std::string_view section, const std::string &file) {
  return read_containers(section, file);
}

std::vector<Arch> DeviceCode::archs() const {
  std::vector<Arch> archs;
  for (const auto &entry : entries) {
    if (std::find(archs.begin(), archs.end(), entry.arch) == archs.end()) archs.push_back(entry.arch);
  }
  std::sort(archs.begin(), archs.end(), [](const Arch &a, const Arch &b) {
    if (a.kind != b.kind) return a.kind == Arch::Kind::sass;
    if (a.cc() != b.cc()) return a.cc() < b.cc();
    return a.suffix < b.suffix;
  });
  return archs;
}

DeviceCode read_device_code(std::string_view bytes, const ElfFacts &elf, const std::string &file) {
  DeviceCode code;
  code.registers_fatbinary = elf.registers_fatbinary;
  const auto section = find_elf_section(bytes, ".nv_fatbin");
  if (!section) return code;
  code.fatbin_section = true;
  code.entries = read_fatbin(bytes.substr(section->first, section->second), file);
  return code;
}

std::string describe_archs(const std::vector<Arch> &archs) {
  std::string sass;
  std::string ptx;
  for (const auto &arch : archs) {
    std::string &group = arch.kind == Arch::Kind::sass ? sass : ptx;
    group += (group.empty() ? "" : ", ") + arch.to_string();
  }
  if (sass.empty() && ptx.empty()) return "no device code";
  std::string text = sass.empty() ? "" : "SASS " + sass;
  if (!ptx.empty()) text += (text.empty() ? "" : "; ") + std::string("PTX ") + ptx;
  return text;
}

}  // namespace kiln::artifact
