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
};

struct ExportReport {
  std::string bundle;             // the file written
  std::vector<BundleEntry> entries;
  std::uint64_t content_bytes = 0;  // of every file carried, uncompressed
  std::uint64_t bundle_bytes = 0;   // of the bundle file
  std::string signed_by;            // key id; empty when unsigned
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
  // Point a name at the entry of a bundle created before the bundle that set its current
  // record (a replayed older bundle). Without it such an import is refused, nothing written.
  bool allow_downgrade = false;
};

struct ImportReport {
  std::string bundle;
  std::string store_root;  // where the entries are now
  std::vector<BundleEntry> entries;
  std::string signed_by;   // key id of the signature verified; empty when unsigned or not checked
  bool signature_verified = false;
  std::uint64_t verified_bytes = 0;  // bytes read and checked against the index
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
