// Fuzz target: an entry's identity.json (device::artifact_identity_from_json), read as the
// runtime reads it: the text is parsed by nlohmann_json (a parse_error there is the runtime's
// IntegrityError "not valid JSON"), then the record is checked. What is accepted must survive a
// round trip through to_json.
#include "fuzz_common.hpp"

#include <nlohmann/json.hpp>

#include "device/identity_json.hpp"

namespace {
const std::string kFile = "/store/demo/store/0123456789abcdef0123456789abcdef/identity.json";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(kiln::fuzz::text_of(data, size));
    } catch (const nlohmann::json::parse_error &) {
      return;  // Runtime::State::entry turns this into an IntegrityError naming the file
    }
    const auto identity = kiln::device::artifact_identity_from_json(json, kFile);
    const nlohmann::json written = kiln::device::to_json(identity);
    const auto again = kiln::device::artifact_identity_from_json(written, kFile);
    if (kiln::device::to_json(again) != written) {
      kiln::fuzz::broken("to_json(identity) reads back differently", written.dump());
    }
  });
}
