// Key lists: which keys may sign what, vouched for by a root key (docs/keys.md).
//
// A fleet keeps one root key offline. It signs a key list naming each signing key, the roles it
// signs for (build: remote cache entries; release: bundles), the consumers it may sign for, when
// it expires and whether it was revoked. A store pins the root's public key and keeps the
// newest list it accepted (bundle/trust_store.hpp). A root is rotated by a list that carries the
// new root endorsed by the old one, so a store pinned to any root of the chain follows it.
//
// One signature per list, no threshold: the root signs rarely and offline, and a second signer
// would not stop what a threshold is for (a stolen root) without a second custodian this format
// cannot conjure; the chain of endorsements is what makes a stolen root recoverable (rotate, and
// stores that accepted the rotation refuse the old root's lists).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/keys.hpp>

#include "bundle/keys.hpp"

namespace kiln::bundle {

inline constexpr const char *kKeyListFormat = "kiln-key-list";
inline constexpr int kKeyListVersion = 1;
inline constexpr std::uint64_t kMaxKeyListBytes = 1u << 20;
inline constexpr const char *kRoleBuild = "build";      // remote cache entries
inline constexpr const char *kRoleRelease = "release";  // bundles

struct RootKey {
  std::string key_id;
  std::string public_hex;
  std::uint64_t since_generation = 1;
  // The previous root's signature (hex) over endorsement_text(): empty for the first root.
  std::string endorsement;
};

struct ListedKey {
  std::string key_id;
  std::string public_hex;
  std::string name;                    // a person's label ("ci-builder")
  std::vector<std::string> roles;      // kRoleBuild, kRoleRelease
  std::vector<std::string> consumers;  // "*": every consumer
  std::string expires;                 // UTC; signatures made after it are refused
  bool revoked = false;
  bool revoked_all = false;  // everything it ever signed is refused
  std::string revoked_at;    // UTC: what it signed at or after this is refused
  std::string revoke_reason;
};

struct KeyList {
  std::uint64_t generation = 0;  // increases with every list the root signs
  std::string created;           // UTC
  std::string expires;           // UTC; a store refuses the list after it
  std::vector<RootKey> roots;    // the first root, then each rotation's; the last one signs
  std::vector<ListedKey> keys;
  std::string signature;    // hex: roots.back() over signed_text
  std::string signed_text;  // the exact bytes signed (set by parse and by sign_key_list)

  const ListedKey *find(const std::string &key_id) const;
  const RootKey &root() const { return roots.back(); }
};

// The bytes a root endorses when it hands over to `next`.
std::string endorsement_text(const RootKey &next);

// The whole file: {"signed": {...}, "signature": {"key_id", "signature"}}.
std::string serialize_key_list(const KeyList &list);
// The structure only (IntegrityError naming `origin` and the field); whether a root vouches for
// it is verify_key_list's.
KeyList parse_key_list(std::string_view text, const std::string &origin);

// Sets created/signed_text/signature with `root`, which must be list.root() (UsageError).
void sign_key_list(KeyList &list, const SecretKey &root);

PublicKey public_key_of(const std::string &key_id, const std::string &public_hex, const std::string &what);

// The chain from `anchor` to the list's root (each root endorsed by the one before it) and the
// list's signature by its root. IntegrityError naming `origin`: the anchor is none of its roots
// ("signed by the wrong root"), an endorsement or the signature does not verify.
void verify_key_list(const KeyList &list, const PublicKey &anchor, const std::string &origin);
// The same against the list's own first root: a list that is at least consistent (what kiln key
// edits before signing a successor).
void verify_key_list_self(const KeyList &list, const std::string &origin);

// Whether `candidate` may follow `accepted` (both verified): a generation not lower, the same
// generation only with the same bytes, and a chain holding the accepted list's root -- once a
// store took a rotation, the old root alone can no longer sign for it. IntegrityError naming
// both generations or roots.
void check_succession(const KeyList &accepted, const KeyList &candidate, const std::string &origin);

struct SignerQuery {
  std::string key_id;
  std::string role;                    // kRoleBuild or kRoleRelease
  std::vector<std::string> consumers;  // every consumer the signed thing carries
  std::string signed_at;               // UTC, from the signed thing (a bundle index's created)
};
// Empty when the list lets the key sign this; else why not (for a refusal message).
std::string signer_refusal(const KeyList &list, const SignerQuery &query);
// Whether the list says the key is revoked for something signed at `signed_at`.
bool revoked_for(const ListedKey &key, const std::string &signed_at);

// The public summary (kiln/keys.hpp), each key's status as of now.
KeyListInfo key_list_info(const KeyList &list, const std::string &file);

}  // namespace kiln::bundle
