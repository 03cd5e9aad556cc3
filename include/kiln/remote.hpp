// kiln: sharing a cache across machines -- remote caches on existing servers (an
// nginx with WebDAV PUT, any server with GET/HEAD/PUT; Redis), never a server of kiln's own.
//
// A build that misses locally asks the remotes, in order, by input key (ac/<consumer>/<input
// key> names a content key) and, once its generators ran, by content key (cas/<consumer>/
// <content key>); a hit is a one-entry bundle (kiln/bundle.hpp), downloaded into staging,
// verified like an import (BLAKE2b per file, XXH3 as every load checks, and the Ed25519
// signature of a trusted key, or of a build key the store's key list allows: kiln/keys.hpp) and
// committed like a build. With no key to vouch for an entry nothing is fetched, unless
// accept-unsigned says the cache is one only this fleet can write. A local build uploads its
// entry to every read-write remote: a remote is written by a machine that signs its uploads
// (sign =) unless its spec says read-only, and by any other only where it says read-write. Whatever a remote does -- down, slow, full,
// hostile -- costs at most its timeout once per process (then it is skipped for a while) and
// the build proceeds locally: a remote is never an error that stops a build or a load.
//
// Configuration: <cache>/kiln.conf (or the file KILN_CONFIG names), lines of `key = value`:
//   remote = http://build1:8080/kiln               repeatable, tried in order
//   remote = redis://build1:6379/0;timeout=2
//   trust = /etc/kiln/fleet.pub                    repeatable: only entries these keys signed
//   sign = /var/lib/kiln/build.key                 uploads are signed with this key
//   accept-unsigned = yes                          take entries no trusted key signed (default no)
//   entry-lifetime = 90d                           uploads expire this long after their creation; a
//                                                  fetch refuses entries expired, unexpiring or valid longer
//   lease_wait = 900                               seconds to wait for another machine's build
//   retry_after = 60                               seconds a failed remote is skipped
// and the environment, which replaces the file's value of the same setting: KILN_REMOTE
// ("URL[;attr...]|URL..."; "off" for none), KILN_REMOTE_TRUST (PATH.pub[:PATH.pub...]),
// KILN_REMOTE_SIGN (PATH.key), KILN_REMOTE_ACCEPT_UNSIGNED (yes/no), KILN_REMOTE_ENTRY_LIFETIME
// (90d, 720h, ...). A remote's attributes:
// read-only, read-write, connect-timeout=S, timeout=S,
// max-size=BYTES (k/M/G suffixes), prefix=P (Redis key prefix, default "kiln:").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct RemoteInfo {
  std::string url;         // without credentials
  bool read_only = true;   // written only where its spec says read-write, or by a machine that signs
  double connect_timeout_s = 0;
  double timeout_s = 0;
  std::string state;       // "ok", "down" (this call could not reach it), "skipped" (failed recently)
  std::string detail;      // the server's answer ("HTTP 404", "PONG") or why it failed
  double round_trip_ms = 0;
};

struct RemoteStatus {
  std::string config_file;                 // the kiln.conf read; empty when there is none
  std::vector<RemoteInfo> remotes;         // in the order they are tried
  std::vector<std::string> trusted_keys;   // PATH.pub files; empty: signatures are not required
  std::string signing_key;                 // PATH.key uploads are signed with; empty: unsigned
  bool accept_unsigned = false;            // entries no key vouches for are taken (checked for damage only)
  std::int64_t entry_lifetime_s = 0;       // an upload's validity; a fetch refuses entries expired or valid longer
};

// One artifact moved by kiln remote push / pull.
struct RemoteTransfer {
  std::string consumer;
  std::string name;
  std::string content_key;
  std::string input_key;
  std::string remote;   // the remote's URL
  std::string status;   // push: "uploaded", "present", "replaced"; pull: "downloaded", "present"; or "failed: why"
  std::uint64_t bytes = 0;  // of the bundle moved
  // "replaced": what the remote held under the upload's keys that this machine refuses, and
  // why (an entry signed by a key it does not trust, unsigned, damaged; a pointer to one).
  std::string replaced;
};

}  // namespace kiln
