// Fuzz target: a store entry's meta.json (store::parse_entry_meta, the text-level half of
// read_entry_meta). What parses must survive a round trip: serialize_entry_meta's output parses,
// and serializes to the same text again.
#include "fuzz_common.hpp"

#include "store/entry.hpp"

namespace {
const kiln::store::fs::path kEntry("/store/demo/store/0123456789abcdef0123456789abcdef");
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    const auto meta = kiln::store::parse_entry_meta(kiln::fuzz::text_of(data, size), kEntry);
    const std::string written = kiln::store::serialize_entry_meta(meta);
    const auto again = kiln::store::parse_entry_meta(written, kEntry);
    if (kiln::store::serialize_entry_meta(again) != written) {
      kiln::fuzz::broken("serialize_entry_meta's output reads back differently", written);
    }
  });
}
