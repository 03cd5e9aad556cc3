// Release versions and expiry: what stops a replayed old bundle.
//
// A bundle carries, under its signature, a release version for each consumer/name it names and
// an expiry time. A store keeps, per consumer, the highest version it accepted from each signer
// for each name (<store>/consumers/<consumer>/versions.json, written atomically under
// versions.lock), and an import offering a lower version -- or the same version for other bytes
// -- is refused unless a person passes allow_downgrade. The state is kept apart from the
// manifest: a later build or publish of the name, or a manifest moved aside by kiln verify
// --repair, does not forget which release the robot already had.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "files/locks.hpp"
#include "store/layout.hpp"

namespace kiln::bundle {

// How long after its creation a bundle expires when the exporter names no time.
inline constexpr std::int64_t kDefaultValiditySeconds = 365LL * 24 * 3600;
// How long a remote cache's entry is valid after its creation unless kiln.conf's entry-lifetime
// says otherwise (remote/config.hpp): 90 days.
inline constexpr std::int64_t kDefaultEntryLifetimeSeconds = 90LL * 86400;
// How far this machine's clock may be behind the exporter's before an expired bundle is refused.
inline constexpr std::int64_t kClockSkewSeconds = 300;

// "90d", "12h", "30m", "3600s" in seconds; nullopt for anything else (zero included).
std::optional<std::int64_t> duration_seconds(const std::string &text);

// The expiry an export records: `text` is a duration from `created` (duration_seconds' forms)
// or a time of the form 2026-01-31T23:59:59Z; empty: kDefaultValiditySeconds.
// UsageError naming the text and the forms.
std::string expiry_of(const std::string &text, std::int64_t created);

struct AcceptedVersion {
  std::uint64_t version = 0;
  std::string content_key;
  std::string accepted;  // when (UTC)
};

// One consumer's state, locked for as long as this object lives (lock order: versions.lock
// before manifest.lock, never the other way).
class ReleaseVersions {
 public:
  // Takes versions.lock (creating the consumer's directory) and reads versions.json (absent:
  // nothing accepted yet). IntegrityError naming the file when it is damaged.
  explicit ReleaseVersions(const store::ConsumerLayout &layout);

  // The highest version `signer` ("unsigned" for a bundle accepted without a signature) has
  // had accepted for `name`.
  std::optional<AcceptedVersion> highest(const std::string &signer, const std::string &name) const;
  void accept(const std::string &signer, const std::string &name, const AcceptedVersion &version);
  // Writes the state if accept changed it (temp + fsync + rename + fsync of the directory).
  void save();

 private:
  store::ConsumerLayout layout_;
  files::FileLock lock_;
  std::map<std::string, std::map<std::string, AcceptedVersion>> signers_;  // signer -> name -> highest
  bool changed_ = false;
};

}  // namespace kiln::bundle
