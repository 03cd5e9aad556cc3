// Fuzz target: a bundle's index (bundle::parse_index), the member an import parses first after
// checking its signature -- and, with an unsigned bundle and --allow-unsigned, the first bytes
// of a stranger it parses at all. What parses must survive a round trip through serialize_index.
#include "fuzz_common.hpp"

#include "bundle/index.hpp"

namespace {

bool same(const kiln::bundle::Index &a, const kiln::bundle::Index &b) {
  if (a.created != b.created || a.kiln_version != b.kiln_version || a.entries.size() != b.entries.size()) return false;
  for (std::size_t e = 0; e < a.entries.size(); ++e) {
    const auto &x = a.entries[e], &y = b.entries[e];
    if (x.consumer != y.consumer || x.content_key != y.content_key || x.kind != y.kind ||
        x.records.size() != y.records.size() || x.files.size() != y.files.size()) {
      return false;
    }
    for (std::size_t r = 0; r < x.records.size(); ++r) {
      if (x.records[r].name != y.records[r].name || x.records[r].input_key != y.records[r].input_key) return false;
    }
    for (std::size_t f = 0; f < x.files.size(); ++f) {
      const auto &p = x.files[f], &q = y.files[f];
      if (p.name != q.name || p.size != q.size || p.mode != q.mode || p.blake2b != q.blake2b) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    const std::string text = kiln::fuzz::text_of(data, size);
    try {
      (void)kiln::bundle::parse_signature(text, "fuzz.kbundle");
    } catch (const kiln::Error &) {
    }
    const auto index = kiln::bundle::parse_index(text, "fuzz.kbundle");
    const std::string written = kiln::bundle::serialize_index(index);
    if (!same(index, kiln::bundle::parse_index(written, "fuzz.kbundle"))) {
      kiln::fuzz::broken("serialize_index's output reads back differently", written);
    }
  });
}
