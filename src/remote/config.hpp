// What the remotes are, from kiln.conf and the environment (kiln/remote.hpp gives the syntax).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

#include "bundle/release_versions.hpp"
#include "remote/backend.hpp"

namespace kiln::remote {

struct RemoteConfig {
  std::string config_file;              // the file read; empty when none
  std::vector<Endpoint> remotes;        // in the order they are tried
  std::vector<std::string> trusted_keys;
  std::string signing_key;
  // Entries no configured key vouches for (unsigned, or signed with no key trusted) are
  // accepted, checked for damage only: for a cache only this fleet can write. Off by default:
  // without a trusted key or a pinned root, nothing a remote serves is taken.
  bool accept_unsigned = false;
  // How long an uploaded entry is valid from its creation (its signed expiry; the fleet's, alike
  // on every machine). A fetch refuses an entry expired or valid for longer (a miss), so a
  // revoked key's entries, whatever creation time they claim, are gone from every fetch within
  // this; an upload replaces an entry that expires within a tenth of it, so the entries the
  // fleet still builds or pushes never expire.
  std::int64_t entry_lifetime_s = bundle::kDefaultEntryLifetimeSeconds;
  double lease_wait_s = 900;            // how long to wait for another machine building the same key
  double retry_after_s = 60;            // a remote that failed is skipped this long (per process)
  bool any() const { return !remotes.empty(); }
};

// One remote: "URL[;attr...]" (read-only, read-write, connect-timeout=S, timeout=S,
// max-size=N[kMG], prefix=P). UsageError naming `origin` (the file and line, or the variable) and the fix.
Endpoint parse_remote(const std::string &spec, const std::string &origin);

// kiln.conf text (`key = value` lines, # comments); UsageError naming file:line. A relative
// `trust` or `sign` path is taken from `file`'s directory (never the current one).
RemoteConfig parse_config_text(const std::string &text, const std::string &file);

// `config_file` when it exists (read as files/trusted_file.hpp says: yours or root's, not
// writable by group or others -- it names the keys trusted to sign code), then KILN_REMOTE /
// KILN_REMOTE_TRUST / KILN_REMOTE_SIGN over it. Fails closed: a file KILN_CONFIG names that is
// absent is a NotFoundError, a KILN_REMOTE_TRUST naming no file (":", " ") a UsageError. No
// message shows a remote's credentials. A remote whose spec says neither read-only nor
// read-write is written only where a signing key is configured.
RemoteConfig load_config(const boost::filesystem::path &config_file);

// <cache>/kiln.conf, or KILN_CONFIG.
boost::filesystem::path config_file_for(const boost::filesystem::path &cache_root);

}  // namespace kiln::remote
