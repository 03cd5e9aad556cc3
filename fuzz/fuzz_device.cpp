// Fuzz target: declared-device strings (KILN_DEVICE, parse_declared_device) and arch names
// (Arch::parse, Arch::parse_list). An arch that parses prints a name that parses to itself.
#include "fuzz_common.hpp"

#include <kiln/identity.hpp>

namespace {

void check_round_trip(const kiln::Arch &arch) {
  const std::string name = arch.to_string();
  if (kiln::Arch::parse(name) != arch) kiln::fuzz::broken("Arch::to_string does not parse back", name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text = kiln::fuzz::text_of(data, size);
  kiln::fuzz::run([&] { check_round_trip(kiln::Arch::parse(text)); });
  kiln::fuzz::run([&] {
    for (const auto &arch : kiln::Arch::parse_list(text)) check_round_trip(arch);
  });
  kiln::fuzz::run([&] {
    const kiln::DeviceIdentity device = kiln::parse_declared_device(text);
    (void)device.label();
    check_round_trip(kiln::Arch::parse(device.arch_name()));
  });
  return 0;
}
