// Fuzz target: a consumer's manifest.json (store::parse_manifest). What parses must survive a
// round trip: serialize_manifest's output parses to the same manifest.
#include "fuzz_common.hpp"

#include "store/manifest.hpp"

namespace {

const kiln::store::fs::path kFile("/store/demo/manifest.json");
const std::string kConsumer = "demo";  // the seed corpus's manifests name this consumer

bool same(const kiln::store::Manifest &a, const kiln::store::Manifest &b) {
  if (a.consumer != b.consumer || a.artifacts.size() != b.artifacts.size()) return false;
  for (const auto &[name, record] : a.artifacts) {
    const auto it = b.artifacts.find(name);
    if (it == b.artifacts.end()) return false;
    const auto &other = it->second;
    if (record.content_key != other.content_key || record.input_key != other.input_key ||
        record.kind != other.kind || record.updated != other.updated) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    const auto manifest = kiln::store::parse_manifest(kiln::fuzz::text_of(data, size), kFile, kConsumer);
    const std::string written = kiln::store::serialize_manifest(manifest);
    if (!same(manifest, kiln::store::parse_manifest(written, kFile, kConsumer))) {
      kiln::fuzz::broken("serialize_manifest's output reads back differently", written);
    }
  });
}
