// What this machine thinks of a value a remote holds under a key it uploads to: the judgement
// behind RemoteCache::upload's rule that a trusted build replaces what every machine refuses
// (an entry planted under its key with another signer's signature, none, or damaged bytes),
// and never what verifies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::store {
class Storage;
}

namespace kiln::remote {

struct EntryVerdict {
  std::optional<std::string> refusal;  // why it is refused (as a fetch would refuse it); nullopt: accepted
  std::string signed_by;               // accepted: the key id verified; empty when none was checked
  std::string expires;                 // accepted: its signed expiry (UTC ISO-8601)
};

// `body` judged as the entry cas/<consumer>/<content_key> (recorded for input_key when it is
// not empty) exactly as a fetch of it judges it -- a kiln bundle, intact, of that one entry,
// signed by one of trusted_keys where any is given (or unsigned with accept_unsigned), unexpired,
// valid for no longer than max_lifetime_s -- in a staging directory of storage's writable cache,
// never committed. Throws what staging throws (a full disk): no verdict then.
EntryVerdict judge_entry(const store::Storage &storage, const std::string &body, const std::string &consumer,
                         const std::string &content_key, const std::string &input_key,
                         const std::vector<std::string> &trusted_keys, bool accept_unsigned,
                         std::int64_t max_lifetime_s);

}  // namespace kiln::remote
