// Fuzz target: the fat binary reader (artifact::read_fatbin) that publish, import and remote fetch
// run on the .nv_fatbin section of a plugin file. The input is the section's bytes. Every entry
// it returns lies inside them, and reading the same bytes again gives the same entries.
#include "fuzz_common.hpp"

#include "artifact/fatbin.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    const std::string bytes = kiln::fuzz::text_of(data, size);
    const auto entries = kiln::artifact::read_fatbin(bytes, "fuzz.so");
    for (const auto &entry : entries) {
      if (entry.offset >= size || entry.payload_size > size - entry.offset) {
        kiln::fuzz::broken("an entry lies outside the section", std::to_string(entry.offset));
      }
    }
    if (kiln::artifact::read_fatbin(bytes, "fuzz.so").size() != entries.size()) {
      kiln::fuzz::broken("the same bytes read twice give other entries", std::to_string(entries.size()));
    }
    (void)kiln::artifact::describe_archs(kiln::artifact::DeviceCode{true, false, entries}.archs());
  });
}
