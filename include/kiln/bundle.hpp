// kiln: bundles -- one signed file carrying chosen store entries to another machine.
//
// A bundle is a tar (libarchive, pax) compressed with zstd. Its first member, kiln-bundle.json
// (the index), lists every entry (consumer, name, content key, kind, input key) and every file
// of each with its size, mode and BLAKE2b-256; the second, kiln-bundle.sig, when present, is an
// Ed25519 signature over the index's exact bytes. Then come the files, entries/<consumer>/
// <content key>/<file>. An import trusts only what a --trust key signed (or, with
// allow_unsigned and no --trust key, an unsigned bundle), checks every byte against the index, and commits
// through the store's own staging + commit protocol: a refused bundle leaves nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct ExportRequest {
  std::string consumer;
  // Artifact names; empty: every artifact the consumer's manifests name (the first store
  // layer naming one wins, as resolve does).
  std::vector<std::string> names;
  std::string output;       // the bundle file written (replaced atomically; never partial)
  std::string signing_key;  // a PATH.key from generate_keypair; empty: unsigned
  // The release version of every consumer/name the bundle carries, signed with it: a store that
  // accepted a higher one from the same signer refuses this bundle. 0: the creation time in
  // seconds since the epoch (increasing from one export to the next on one machine).
  std::uint64_t release_version = 0;
  // When the bundle expires: a duration from now ("90d", "12h", "30m", "3600s") or a UTC time
  // "2027-01-31T23:59:59Z"; empty: a year. An import after it is refused (allow_expired).
  std::string expires;
  // A key list (kiln/keys.hpp) to carry: a store that pins its root takes it when it is newer than
  // its own, and judges this bundle's signer by it. Empty: none.
  std::string key_list;
};

// One entry of a bundle.
struct BundleEntry {
  std::string consumer;
  std::string name;
  std::string content_key;
  std::string kind;       // kKindPlugin or kKindImages (kiln/module.hpp)
  std::string input_key;  // empty for published artifacts
  std::uint64_t bytes = 0;  // of its files
  std::string status;     // import: "added", "already present" or "downgraded"; export: "exported"
  std::uint64_t release_version = 0;  // 0: unversioned (an older kiln's bundle)
};

struct ExportReport {
  std::string bundle;             // the file written
  std::vector<BundleEntry> entries;
  std::uint64_t content_bytes = 0;  // of every file carried, uncompressed
  std::uint64_t bundle_bytes = 0;   // of the bundle file
  std::string signed_by;            // key id; empty when unsigned
  std::uint64_t release_version = 0;
  std::string expires;              // UTC
  std::uint64_t key_list_generation = 0;  // of the key list carried; 0: none
};

struct ImportRequest {
  std::string bundle;
  // A directory to import into (created when absent; it becomes a store root, e.g. a
  // read-only vendor layer of a robot image). Empty: the writable cache.
  std::string into;
  std::vector<std::string> trusted_keys;  // PATH.pub files; the bundle must be signed by one
  // With no trusted key: import an unsigned bundle (or a signed one, its signature unchecked).
  // With any trusted key it changes nothing: an unsigned bundle is refused (IntegrityError).
  bool allow_unsigned = false;
  // Point a name at an older release: a release version lower than the highest this store
  // accepted from the same signer (or the same version for other bytes), or a bundle created
  // before the one that set the name's current record. Without it such an import is refused,
  // nothing written. A person's rollback; the store keeps its highest version.
  bool allow_downgrade = false;
  // Import a bundle past its expiry (plus a clock skew of 5 minutes): for a robot whose clock is
  // known to be wrong. Without it an expired bundle is refused, nothing written.
  bool allow_expired = false;
};

struct ImportReport {
  std::string bundle;
  std::string store_root;  // where the entries are now
  std::vector<BundleEntry> entries;
  std::string signed_by;   // key id of the signature verified; empty when unsigned or not checked
  bool signature_verified = false;
  std::uint64_t verified_bytes = 0;  // bytes read and checked against the index
  std::string expires;               // the bundle's expiry (UTC); empty for an older kiln's bundle
  bool expired = false;              // past it, imported with allow_expired
  // The generation of the key list the bundle carried, when the store took it as its newest
  // (kiln/keys.hpp); 0: none taken.
  std::uint64_t key_list_generation = 0;
};

struct KeyPair {
  std::string secret_file;  // PATH.key, mode 0600
  std::string public_file;  // PATH.pub
  std::string key_id;       // 16 hex digits: the first 8 bytes of BLAKE2b of the public key
};

// Writes a new Ed25519 key pair PATH.key (secret, created exclusively with mode 0600) and
// PATH.pub. UsageError when either exists (a key is never overwritten), IoError on disk errors.
KeyPair generate_keypair(const std::string &path_prefix);

}  // namespace kiln
