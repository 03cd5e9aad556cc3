// kiln publish checks everything it can without running plugin code, and refuses with the
// reason: a wrong-machine, wrong-class or truncated ELF, a file that is not a shared object, a
// stamp offering only another ABI major, and the unload rules kiln_add_plugin enforces (one
// export, no gnu-unique symbol, no NODELETE). Also the ELF reader under hostile bytes.
#include <doctest/doctest.h>

#include <elf.h>

#include <cstring>
#include <functional>
#include <random>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>

#include "artifact/elf.hpp"
#include "artifact/plugin_file.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::error_of;
using kiln::test::has;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

// A copy of a test plugin with `edit` applied to its bytes, as <dir>/<name>.
fs::path edited_copy(const TempDir &dir, const std::string &from, const std::string &name,
                     const std::function<void(std::string &)> &edit) {
  std::string bytes = kiln::test::read_text(from);
  edit(bytes);
  const fs::path file = dir / name;
  kiln::test::write_text(file, bytes);
  return file;
}

std::uint16_t other_machine() { return artifact::host_elf_machine() == EM_AARCH64 ? EM_X86_64 : EM_AARCH64; }

void set_machine(std::string &bytes, std::uint16_t machine) {
  std::memcpy(&bytes[offsetof(Elf64_Ehdr, e_machine)], &machine, sizeof machine);
}

bool nothing_published(const TempDir &dir) { return !fs::exists(dir / "cache" / "consumers" / "tests" / "manifest.json"); }

}  // namespace

TEST_CASE("publish checks: a shared object for another machine is refused, naming both machines") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  const fs::path file = edited_copy(dir, KILN_TEST_PLUGIN_HOST_ONLY, "libother.so",
                                    [](std::string &bytes) { set_machine(bytes, other_machine()); });
  const std::string message = error_of<AbiError>([&] { kiln::test::publish_plugin(runtime, file.string()); });
  CHECK(has(message, file.string()));
  CHECK(has(message, artifact::elf_machine_name(other_machine())));
  CHECK(has(message, artifact::elf_machine_name(artifact::host_elf_machine())));
  CHECK(nothing_published(dir));
}

TEST_CASE("publish checks: another ELF class or byte order is refused") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  const fs::path narrow = edited_copy(dir, KILN_TEST_PLUGIN_HOST_ONLY, "lib32.so",
                                      [](std::string &bytes) { bytes[EI_CLASS] = ELFCLASS32; });
  CHECK(has(error_of<AbiError>([&] { kiln::test::publish_plugin(runtime, narrow.string()); }), "32-bit"));
  const fs::path big = edited_copy(dir, KILN_TEST_PLUGIN_HOST_ONLY, "libbig.so",
                                   [](std::string &bytes) { bytes[EI_DATA] = ELFDATA2MSB; });
  CHECK(has(error_of<AbiError>([&] { kiln::test::publish_plugin(runtime, big.string()); }), "big-endian"));
  CHECK(nothing_published(dir));
}

TEST_CASE("publish checks: a truncated shared object is an IntegrityError, even when its stamp survived") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  // The section header table sits at the end of the file: cutting a little keeps the stamp.
  const fs::path file = edited_copy(dir, KILN_TEST_PLUGIN_HOST_ONLY, "libcut.so",
                                    [](std::string &bytes) { bytes.resize(bytes.size() - 200); });
  const std::string message = error_of<IntegrityError>([&] { kiln::test::publish_plugin(runtime, file.string()); });
  CHECK(has(message, file.string()));
  CHECK(has(message, "truncated"));
  CHECK(nothing_published(dir));
}

TEST_CASE("publish checks: a text file named .so is not a shared object") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  kiln::test::write_text(dir / "libtext.so", "this is not a plugin\n");
  CHECK(has(error_of<AbiError>([&] { kiln::test::publish_plugin(runtime, (dir / "libtext.so").string()); }),
            "not a shared object"));
}

TEST_CASE("publish checks: a plugin offering only ABI 2 is refused at publish") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  const std::string message = error_of<AbiError>([&] { kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_ABI2); });
  CHECK(has(message, "offers plugin ABI up to 2.0"));
  CHECK(has(message, "this kiln speaks 1.x"));
  CHECK(nothing_published(dir));
}

TEST_CASE("publish checks: a plugin breaking the unload rules is refused, naming each symbol and the fix") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  const std::string message =
      error_of<AbiError>([&] { kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_UNLOADABLE); });
  CHECK(has(message, KILN_TEST_PLUGIN_UNLOADABLE));
  CHECK(has(message, "kiln_test_extra_export_one"));
  CHECK(has(message, "kiln_test_extra_export_two"));
  CHECK(has(message, "-fvisibility=hidden"));
  CHECK(has(message, "_ZZ24kiln_test_unique_countervE7counter"));  // the gnu-unique static local
  CHECK(has(message, "-fno-gnu-unique"));
  CHECK(has(message, "NODELETE"));
  CHECK(nothing_published(dir));
}

TEST_CASE("publish checks: every plugin built with kiln_add_plugin passes the same rules") {
  for (const char *file : {KILN_TEST_PLUGIN_HOST_ONLY, KILN_TEST_PLUGIN_EXAMPLE, KILN_TEST_PLUGIN_HOSTILE,
                           KILN_TEST_PLUGIN_THROWING_HELPER, KILN_TEST_PLUGIN_HOST_KERNELS_USER}) {
    const std::string shown = file;
    CAPTURE(shown);
    const std::string bytes = kiln::test::read_text(file);
    const artifact::ElfFacts facts = artifact::read_elf(bytes, file);
    CHECK(facts.machine == artifact::host_elf_machine());
    CHECK(artifact::unload_rule_problems(facts).empty());
    // The load path reads the stamp where its section starts: the record the full search finds.
    const auto section = artifact::find_elf_section(bytes, ".kiln_stamp");
    REQUIRE(section.has_value());
    CHECK(section->first == artifact::find_stamp(bytes, file).offset);
    CHECK(artifact::stamp_at(bytes, section->first, file)->content_key == artifact::kUnstampedKey);
  }
}

TEST_CASE("elf reader: hostile headers give typed errors, never a read past the bytes") {
  const std::string good = kiln::test::read_text(KILN_TEST_PLUGIN_HOST_ONLY);
  const auto verdict = [](const std::string &bytes) -> std::string {
    try {
      artifact::read_elf(bytes, "x.so");
      return "accepted";
    } catch (const IntegrityError &) {
      return "integrity";
    } catch (const AbiError &) {
      return "abi";
    }
  };
  Elf64_Ehdr header;
  std::memcpy(&header, good.data(), sizeof header);
  const auto with_header = [&](const std::function<void(Elf64_Ehdr &)> &edit) {
    Elf64_Ehdr changed = header;
    edit(changed);
    std::string bytes = good;
    std::memcpy(&bytes[0], &changed, sizeof changed);
    return bytes;
  };
  CHECK(verdict(good) == "accepted");
  CHECK(verdict(good.substr(0, 10)) == "integrity");
  CHECK(verdict(good.substr(0, 3)) == "abi");
  CHECK(verdict(with_header([](Elf64_Ehdr &h) { h.e_shoff = ~0ull - 8; })) == "integrity");
  CHECK(verdict(with_header([](Elf64_Ehdr &h) { h.e_shnum = 0xffff; })) == "integrity");
  CHECK(verdict(with_header([](Elf64_Ehdr &h) { h.e_phoff = ~0ull; })) == "integrity");
  CHECK(verdict(with_header([](Elf64_Ehdr &h) { h.e_shentsize = 7; })) == "integrity");
  CHECK(verdict(with_header([](Elf64_Ehdr &h) { h.e_shoff = 0; })) == "abi");  // no section headers
  CHECK(verdict(with_header([](Elf64_Ehdr &h) { h.e_type = ET_REL; })) == "abi");

  // Section headers pointing anywhere: every mutation is refused or accepted, none crashes.
  std::mt19937 random(12345);
  int refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = good;
    const std::size_t table = header.e_shoff;
    const std::size_t span = std::size_t{header.e_shnum} * sizeof(Elf64_Shdr);
    for (int flips = 0; flips < 4; ++flips) {
      const std::size_t at = table + random() % span;
      bytes[at] = static_cast<char>(random());
    }
    refused += verdict(bytes) != "accepted" ? 1 : 0;
    // The load path's section lookup never throws and never answers a range outside the bytes.
    if (const auto section = artifact::find_elf_section(bytes, ".kiln_stamp")) {
      CHECK(section->first + section->second <= bytes.size());
    }
  }
  CHECK(refused > 0);
  CHECK_FALSE(artifact::find_elf_section("not an ELF file at all", ".kiln_stamp").has_value());
  CHECK_FALSE(artifact::find_elf_section(good, ".no_such_section").has_value());
}
