// A store's trust state: <store>/trust/root.pub, the root key it pins, and trust/keys.json, the
// newest key list (bundle/key_list.hpp) it accepted. A robot image ships both in a read-only
// layer, so nobody on the robot can swap the root; newer lists, arriving with bundles, are kept
// in the writable cache and must chain from the pinned root.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

#include "bundle/key_list.hpp"
#include "store/storage.hpp"

namespace kiln::bundle {

struct TrustState {
  std::optional<PublicKey> anchor;  // none: no key list in force (trusted keys as given, if any)
  std::optional<KeyList> list;      // the newest accepted list that chains from the anchor
  std::string list_file;
  bool active() const { return anchor.has_value(); }
};

boost::filesystem::path trust_dir(const boost::filesystem::path &store_root);

// Over `store_roots` in search order (read-only layers first, the writable cache last): the
// anchor of the first that pins a root, and the list of the highest generation among them that
// the anchor vouches for. A list that does not verify, a root.pub that is not a kiln public key
// (or is writable by others), or two stores pinning different roots: IntegrityError /
// UsageError naming the file -- trust fails closed.
TrustState read_trust(const std::vector<boost::filesystem::path> &store_roots);
// The same over every store `storage` searches.
TrustState read_trust(const store::Storage &storage);

// Pins `anchor_file`'s key as `store_root`'s root (a copy in trust/root.pub). Pinning the same
// key again is a no-op; another one is refused (UsageError): a root changes only by rotation.
void pin_root(const boost::filesystem::path &store_root, const std::string &anchor_file);

// Keeps `list` (verified against `state`'s anchor by the caller) as store_root's trust/keys.json
// when it is newer than what store_root holds: checked again under trust/trust.lock, written
// atomically. Returns whether it was written.
bool keep_key_list(const boost::filesystem::path &store_root, const TrustState &state, const KeyList &list);

}  // namespace kiln::bundle
