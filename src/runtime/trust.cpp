// Runtime::trust_status / trust: the root a store pins and the key list it follows (kiln/keys.hpp).
#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/keys.hpp>
#include <kiln/runtime.hpp>

#include "bundle/trust_store.hpp"
#include "files/files.hpp"
#include "runtime/state.hpp"
#include "store/layout.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

namespace fs = boost::filesystem;

TrustStatus status_of(const bundle::TrustState &state) {
  TrustStatus status;
  if (!state.anchor) return status;
  status.root_key_id = state.anchor->key_id;
  status.root_file = state.anchor->file;
  if (state.list) {
    status.key_list_file = state.list_file;
    status.key_list = bundle::key_list_info(*state.list, state.list_file);
  }
  return status;
}

}  // namespace

TrustStatus Runtime::trust_status() const try {
  return status_of(bundle::read_trust(*state_->storage));
} catch (...) {
  support::rethrow_typed("reading the stores' trust state");
}

TrustStatus Runtime::trust(const TrustRequest &request) try {
  if (request.root.empty() && request.key_list.empty()) {
    throw UsageError(
        "nothing to trust: pass --root ROOT.pub to pin a root, --key-list FILE to accept a newer list, or both");
  }
  fs::path target = state_->writable().root();
  if (!request.into.empty()) target = store::resolve_store_root(fs::absolute(request.into));
  // --into: that directory alone, as an import into it sees it; else every store this Runtime searches.
  const auto read_state = [&] {
    return request.into.empty() ? bundle::read_trust(*state_->storage) : bundle::read_trust(std::vector<fs::path>{target});
  };
  bundle::TrustState state = read_state();
  if (!request.root.empty()) {
    // A root a layer pins is not replaced from the writable cache beside it: checked before
    // anything is written.
    const bundle::PublicKey wanted = bundle::read_public_key(request.root);
    if (state.anchor && state.anchor->key_id != wanted.key_id) {
      throw UsageError("the stores already trust root " + state.anchor->key_id + " (" + state.anchor->file + "), not " +
                       wanted.key_id + " (" + request.root +
                       "): a root changes only by a rotation the old root signs (kiln key rotate-root, then kiln key "
                       "trust --key-list with the new list)");
    }
    files::create_directories(target);
    bundle::pin_root(target, request.root);
    state = read_state();
  }
  if (!request.key_list.empty()) {
    if (!state.active()) {
      throw UsageError("store " + target.string() +
                       " pins no root key: a key list cannot vouch for itself; pass --root ROOT.pub too");
    }
    const std::string text = files::read_file(request.key_list, files::FileOrigin::input, bundle::kMaxKeyListBytes);
    const bundle::KeyList list = bundle::parse_key_list(text, request.key_list);
    bundle::verify_key_list(list, *state.anchor, request.key_list);
    if (state.list) bundle::check_succession(*state.list, list, request.key_list);
    bundle::keep_key_list(target, state, list);
    state = read_state();
  }
  return status_of(state);
} catch (...) {
  support::rethrow_typed("trusting keys in the store");
}

}  // namespace kiln
