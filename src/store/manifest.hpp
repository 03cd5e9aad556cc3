// A consumer's manifest.json: artifact name -> content key. Read without a lock (it is only
// ever replaced by rename), written under manifest.lock.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "store/layout.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

struct ManifestRecord {
  std::string content_key;
  std::string input_key;  // empty for published (not built) artifacts
  std::string kind;       // kKindPlugin or kKindImages (kiln/module.hpp)
  std::string updated;    // UTC ISO-8601
  // Written by an import: the signed "created" time (UTC ISO-8601) of the bundle that set this
  // record, so that an older bundle replayed later is seen as rolling the name back. Empty for
  // records a publish or a build wrote.
  std::string bundle_created;
  // Written by an import a person let roll the name back (--allow-downgrade): when, and from
  // what. Kept until the name is next written, so the store says why it runs an older release.
  std::string rollback;
};

struct Manifest {
  std::string consumer;
  std::map<std::string, ManifestRecord> artifacts;
};

// nullopt when the file does not exist. Malformed or truncated JSON -> IntegrityError,
// another schema -> IncompatibleError; both name the file and the fix.
std::optional<Manifest> read_manifest(const fs::path &file, const std::string &consumer);
Manifest parse_manifest(const std::string &text, const fs::path &file, const std::string &consumer);
std::string serialize_manifest(const Manifest &manifest);

// Read-modify-write under the consumer's manifest lock, replaced atomically. A manifest that
// cannot be read is not overwritten (the error propagates): nothing is lost silently.
void update_manifest(const ConsumerLayout &layout, const std::function<void(Manifest &)> &change);
// The same for a caller that already holds the manifest lock (kiln gc, evicting under it).
void update_manifest_held(const ConsumerLayout &layout, const std::function<void(Manifest &)> &change);

std::string utc_now_iso8601();

}  // namespace kiln::store
