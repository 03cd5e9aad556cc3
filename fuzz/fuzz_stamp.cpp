// Fuzz target: the ELF build-stamp finder (artifact::find_stamp) and the key writer
// (artifact::write_stamp_key) that publish and load use on a plugin file's bytes. A stamp that is
// found can be re-keyed, and is found again at the same place with the new key.
#include "fuzz_common.hpp"

#include "artifact/stamp.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    std::string bytes = kiln::fuzz::text_of(data, size);
    const auto stamp = kiln::artifact::find_stamp(bytes, "fuzz.so");
    const std::string key = "0123456789abcdef0123456789abcdef";
    kiln::artifact::write_stamp_key(bytes, stamp, key);
    const auto again = kiln::artifact::find_stamp(bytes, "fuzz.so");
    if (again.offset != stamp.offset || again.content_key != key || again.abi_version != stamp.abi_version) {
      kiln::fuzz::broken("a re-keyed stamp does not read back", again.content_key);
    }
    kiln::artifact::write_stamp_key(bytes, again, kiln::artifact::kUnstampedKey);
  });
}
