// Fuzz target: a key list (bundle::parse_key_list), which an import reads from a bundle before
// the bundle's signature is judged, then its endorsements and signature (verify_key_list_self).
// What parses must survive a round trip through serialize_key_list with the same signed bytes.
#include "fuzz_common.hpp"

#include "bundle/key_list.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    const std::string text = kiln::fuzz::text_of(data, size);
    const auto list = kiln::bundle::parse_key_list(text, "fuzz-keys.json");
    const std::string written = kiln::bundle::serialize_key_list(list);
    if (kiln::bundle::parse_key_list(written, "fuzz-keys.json").signed_text != list.signed_text) {
      kiln::fuzz::broken("serialize_key_list's output signs other bytes", written);
    }
    kiln::bundle::verify_key_list_self(list, "fuzz-keys.json");
  });
}
