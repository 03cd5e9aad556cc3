// kiln: key lists -- which keys may sign builds and releases, vouched for by one root key.
//
// A fleet keeps a root key (kiln keygen) offline. Its key list names every signing key with the
// roles it signs for ("build": remote cache entries; "release": bundles), the consumers ("*":
// all) and an expiry, and marks revoked keys. Every edit writes a new generation, signed by the
// root; a root is replaced by rotate_root, which the old root endorses. A store pins the root
// (Runtime::trust, kiln key trust) and from then on judges every bundle it imports and every
// remote entry it fetches by the newest list it accepted: a list of a lower generation, or one
// a rotated-away root signs, is refused. Format and rules: docs/keys.md.
//
// Every function here edits or reads a file outside any store; call from any thread, one writer
// per file (the list is replaced atomically, a concurrent edit of the same file loses one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct KeyListKey {
  std::string key_id;
  std::string name;
  std::vector<std::string> roles;
  std::vector<std::string> consumers;
  std::string expires;     // UTC
  std::string status;      // "valid", "expired" or "revoked"
  std::string revoked_at;  // UTC; empty when not revoked, or revoked for everything
  bool revoked_all = false;
  std::string revoke_reason;
};

struct KeyListInfo {
  std::string file;
  std::uint64_t generation = 0;
  std::string created;  // UTC
  std::string expires;  // UTC
  bool expired = false;
  std::vector<std::string> roots;  // key ids, the first root first; the last signs the list
  std::vector<KeyListKey> keys;
};

// What every edit names: the list and the current root's secret key. The new generation expires
// after `expires` (a duration "365d", "12h" or a UTC time; empty: a year).
struct KeyListEdit {
  std::string file;
  std::string root_key;  // PATH.key
  std::string expires;
};

// Generation 1, no keys yet. UsageError when `file` exists.
KeyListInfo create_key_list(const KeyListEdit &edit);

struct AddKeyRequest {
  KeyListEdit edit;
  std::string public_key;              // PATH.pub of the key to allow
  std::string name;                    // a label for people ("ci-builder"); default: the file's stem
  std::vector<std::string> roles;      // "build", "release"
  std::vector<std::string> consumers;  // default: "*"
  std::string key_expires;             // as KeyListEdit::expires; default a year
};
// Adds the key, or replaces its roles, consumers and expiry (a revoked key cannot be re-added:
// make a new key pair).
KeyListInfo add_key(const AddKeyRequest &request);

struct RevokeKeyRequest {
  KeyListEdit edit;
  std::string key_id;
  // What the key signed at or after this UTC time is refused; empty: now. A key that may have
  // been stolen is revoked with all = true: a thief can backdate what they sign.
  std::string at;
  bool all = false;
  std::string reason;
};
KeyListInfo revoke_key(const RevokeKeyRequest &request);

// The next generation with `new_root_key` (PATH.key) as its root, endorsed by edit.root_key.
KeyListInfo rotate_root(const KeyListEdit &edit, const std::string &new_root_key);

// A list file, checked for consistency (every endorsement and its signature against its own
// roots), not for being trusted -- that is the store's pinned root's to say.
KeyListInfo read_key_list(const std::string &file);

// What a store follows: the pinned root and the newest list it accepted (Runtime::trust_status).
struct TrustStatus {
  std::string root_key_id;  // empty: no root pinned; bundles and entries are judged by --trust keys
  std::string root_file;
  std::string key_list_file;  // empty: none accepted yet
  KeyListInfo key_list;
};

struct TrustRequest {
  std::string root;      // PATH.pub to pin; empty: keep the pinned one
  std::string key_list;  // a newer list to accept; empty: none
  std::string into;      // a store directory (e.g. a robot image's layer); empty: the writable cache
};

}  // namespace kiln
