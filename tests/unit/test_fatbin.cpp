// The fat binary reader (src/artifact/fatbin.hpp) on what nvcc 13 really writes -- several archs,
// PTX only, zstd-compressed entries, arch-specific and family archs -- and on damaged bytes:
// each damage is an IntegrityError naming the file, never a read past the section.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <kiln/errors.hpp>

#include "artifact/elf.hpp"
#include "artifact/fatbin.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;

namespace {

std::optional<std::string> no_fatbin_fixtures() {
  if (std::string(KILN_TEST_FATBIN_DIR).empty()) return std::string("no nvcc in this build: no fat binary fixtures");
  return std::nullopt;
}

std::string fixture(const std::string &name) { return std::string(KILN_TEST_FATBIN_DIR) + "/" + name + ".so"; }

std::vector<std::string> arch_names(const std::vector<Arch> &archs) {
  std::vector<std::string> names;
  for (const auto &arch : archs) names.push_back(arch.to_string());
  return names;
}

artifact::DeviceCode device_code_of(const std::string &file) {
  const std::string bytes = kiln::test::read_text(file);
  return artifact::read_device_code(bytes, artifact::read_elf(bytes, file), file);
}

// The .nv_fatbin section of a fixture, as a string of its own.
std::string section_of(const std::string &file) {
  const std::string bytes = kiln::test::read_text(file);
  const auto where = artifact::find_elf_section(bytes, ".nv_fatbin");
  REQUIRE(where.has_value());
  return bytes.substr(where->first, where->second);
}

// The first entry of `section` satisfying `pick`.
artifact::FatbinEntry entry_where(const std::string &section, const std::function<bool(const artifact::FatbinEntry &)> &pick) {
  for (const auto &entry : artifact::read_fatbin(section, "fixture")) {
    if (pick(entry)) return entry;
  }
  FAIL("no such entry");
  return {};
}

template <class T>
void put(std::string &bytes, std::uint64_t offset, T value) {
  std::memcpy(&bytes[offset], &value, sizeof value);
}

}  // namespace

TEST_CASE("fatbin: SASS for two archs and PTX: each arch listed once, every cubin's ELF header agrees" *
          kiln::test::skip_if(no_fatbin_fixtures)) {
  const auto code = device_code_of(fixture("sm80_sm90_ptx90"));
  CHECK(code.fatbin_section);
  CHECK(code.registers_fatbinary);
  CHECK(arch_names(code.archs()) == std::vector<std::string>{"sm_80", "sm_90", "compute_90"});
  CHECK(artifact::describe_archs(code.archs()) == "SASS sm_80, sm_90; PTX compute_90");
  for (const auto &entry : code.entries) {
    if (entry.arch.kind == Arch::Kind::sass) CHECK(entry.elf_sm == entry.arch.cc());
  }
}

TEST_CASE("fatbin: a PTX-only file lists its virtual arch and no SASS" * kiln::test::skip_if(no_fatbin_fixtures)) {
  const auto code = device_code_of(fixture("ptx80"));
  CHECK(arch_names(code.archs()) == std::vector<std::string>{"compute_80"});
  CHECK(code.any());
}

TEST_CASE("fatbin: compressed entries (-Xfatbin -compress-all) are read, their cubin header inflated and checked" *
          kiln::test::skip_if(no_fatbin_fixtures)) {
  const auto compressed = device_code_of(fixture("sm90_compressed"));
  REQUIRE(!compressed.entries.empty());
  for (const auto &entry : compressed.entries) {
    CHECK(entry.compressed);
    CHECK(entry.elf_sm == 90);
  }
  CHECK(arch_names(compressed.archs()) == std::vector<std::string>{"sm_90"});
  const auto plain = device_code_of(fixture("sm90_uncompressed"));
  REQUIRE(!plain.entries.empty());
  for (const auto &entry : plain.entries) CHECK(!entry.compressed);
  CHECK(arch_names(plain.archs()) == std::vector<std::string>{"sm_90"});
}

TEST_CASE("fatbin: arch-specific (sm_90a) and family (sm_100f, compute_100f) archs keep their suffix" *
          kiln::test::skip_if(no_fatbin_fixtures)) {
  const auto code = device_code_of(fixture("sm90a_sm100f"));
  CHECK(arch_names(code.archs()) == std::vector<std::string>{"sm_90a", "sm_100f", "compute_100f"});
}

TEST_CASE("fatbin: the test plugins: the nvcc-built example holds what it was built for, the g++-built one nothing") {
  const auto host_only = device_code_of(KILN_TEST_PLUGIN_HOST_ONLY);
  CHECK(!host_only.any());
  CHECK(host_only.archs().empty());
  CHECK(artifact::describe_archs(host_only.archs()) == "no device code");
  if (!no_fatbin_fixtures()) {  // built with nvcc (a cross build makes the example host-only)
    const auto example = device_code_of(KILN_TEST_PLUGIN_EXAMPLE);
    CHECK(example.any());
    CHECK(!example.archs().empty());
  }
}

TEST_CASE("fatbin: damaged containers and entries are IntegrityErrors naming the file and what is wrong" *
          kiln::test::skip_if(no_fatbin_fixtures)) {
  const std::string section = section_of(fixture("sm80_sm90_ptx90"));
  const auto refused = [](const std::string &bytes) {
    return error_of<IntegrityError>([&] { artifact::read_fatbin(bytes, "probe.so"); });
  };
  SUBCASE("no magic") {
    std::string bytes = section;
    put<std::uint32_t>(bytes, 0, 0x12345678u);
    CHECK(has(refused(bytes), "no fat binary magic"));
    CHECK(has(refused(bytes), "probe.so"));
  }
  SUBCASE("a container larger than the section") {
    std::string bytes = section;
    put<std::uint64_t>(bytes, 8, ~std::uint64_t{0} - 4);
    CHECK(has(refused(bytes), "reaches past the section's end"));
  }
  SUBCASE("an entry larger than its container") {
    std::string bytes = section;
    put<std::uint64_t>(bytes, 16 + 8, std::uint64_t{1} << 40);
    CHECK(has(refused(bytes), "reaches past its container's end"));
  }
  SUBCASE("an entry header of an absurd size") {
    std::string bytes = section;
    put<std::uint32_t>(bytes, 16 + 4, 3);
    CHECK(has(refused(bytes), "entry header claims 3 bytes"));
  }
  SUBCASE("an entry relabelled: its cubin names another SM") {
    std::string bytes = section;
    const auto entry = entry_where(section, [](const artifact::FatbinEntry &e) {
      return e.arch.kind == Arch::Kind::sass && !e.compressed && e.arch.cc() == 80;
    });
    put<std::uint32_t>(bytes, entry.offset + 28, 86);
    const std::string message = refused(bytes);
    CHECK(has(message, "labelled sm_86 holds a cubin whose ELF header names sm_80"));
  }
  SUBCASE("a cubin that is no ELF object") {
    std::string bytes = section;
    const auto entry = entry_where(section, [](const artifact::FatbinEntry &e) {
      return e.arch.kind == Arch::Kind::sass && !e.compressed;
    });
    const std::uint32_t header_size = [&] {
      std::uint32_t size = 0;
      std::memcpy(&size, &section[entry.offset + 4], sizeof size);
      return size;
    }();
    bytes[entry.offset + header_size] = 'X';
    CHECK(has(refused(bytes), "does not hold a 64-bit little-endian ELF object"));
  }
  SUBCASE("a compressed cubin that is no zstd frame") {
    std::string bytes = section_of(fixture("sm90_compressed"));
    const auto entry = entry_where(bytes, [](const artifact::FatbinEntry &e) { return e.compressed; });
    std::uint32_t header_size = 0;
    std::memcpy(&header_size, &bytes[entry.offset + 4], sizeof header_size);
    put<std::uint32_t>(bytes, entry.offset + header_size, 0);
    CHECK(has(refused(bytes), "no zstd frame"));
  }
  SUBCASE("cut short at every 8th byte: entries or an IntegrityError, never more") {
    for (std::size_t size = 1; size < section.size(); size += 8) {
      try {
        (void)artifact::read_fatbin(std::string_view(section).substr(0, size), "probe.so");
      } catch (const IntegrityError &) {
      }
    }
  }
}

TEST_CASE("fatbin: random byte damage gives entries or an IntegrityError, never a crash or another error" *
          kiln::test::skip_if(no_fatbin_fixtures)) {
  const std::string section = section_of(fixture("sm80_sm90_ptx90"));
  std::mt19937 random(20261205);
  std::size_t refused = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = section;
    for (int flips = 1 + round % 4; flips > 0; --flips) {
      bytes[random() % std::min<std::size_t>(bytes.size(), 512)] = static_cast<char>(random());
    }
    try {
      (void)artifact::read_fatbin(bytes, "probe.so");
    } catch (const IntegrityError &) {
      ++refused;
    }
  }
  CHECK(refused > 0);  // the headers lie in the first 512 bytes: some damage must be seen
}
