// Fuzz target: an entry's identity.json, read exactly as the runtime reads it
// (artifact::parse_artifact_identity: the bounded JSON reader, then the record's checks). What is
// accepted must survive a round trip through to_json.
#include "fuzz_common.hpp"

#include <nlohmann/json.hpp>

#include "artifact/identity_json.hpp"

namespace {
const std::string kFile = "/store/demo/store/0123456789abcdef0123456789abcdef/identity.json";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    const auto identity = kiln::artifact::parse_artifact_identity(kiln::fuzz::text_of(data, size), kFile);
    const nlohmann::json written = kiln::artifact::to_json(identity);
    const auto again = kiln::artifact::artifact_identity_from_json(written, kFile);
    if (kiln::artifact::to_json(again) != written) {
      kiln::fuzz::broken("to_json(identity) reads back differently", written.dump());
    }
  });
}
