// kiln import: a bundle read as a stream, checked member by member, committed only whole.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <kiln/bundle.hpp>
#include <kiln/log.hpp>

#include "bundle/release_versions.hpp"
#include "store/storage.hpp"

namespace kiln::bundle {

// Imports request.bundle into `target`'s writable store (request.into is the caller's to turn
// into `target`). `changed` is told each consumer/name whose manifest record now names another
// content key (the swap trigger).
ImportReport read_bundle(const store::Storage &target, const ImportRequest &request, const LogCallback &log,
                         const std::function<void(const std::string &consumer, const std::string &name)> &changed);

// One entry fetched from a remote cache (remote/cache.hpp): a bundle of exactly one
// entry of `consumer` -- of `content_key` and recorded for `input_key` where those are given --
// verified as an import is (signed by one of trusted_keys, or by a build key of the key list
// target follows; with neither, unsigned or not, only where accept_unsigned, and then checked
// for damage only), unexpired and valid for no longer than max_lifetime_s from its creation,
// and committed into target's writable cache. No manifest record and no
// bykey pointer is written: the caller points what it asked for. IntegrityError (nothing
// committed) for anything else. With commit false, only the verdict: verified, never committed
// (an upload judging what a remote holds under its key).
struct EntryBundleRequest {
  std::string bundle;  // the downloaded file
  std::string consumer;
  std::string content_key;
  std::string input_key;
  std::vector<std::string> trusted_keys;
  bool commit = true;
  bool accept_unsigned = false;  // kiln.conf's accept-unsigned: no key vouches, damage is all that is checked
  // kiln.conf's entry-lifetime: an entry valid for longer from its creation (or with no expiry)
  // is refused, as an expired one is.
  std::int64_t max_lifetime_s = kDefaultEntryLifetimeSeconds;
};
struct FetchedEntry {
  std::string content_key;
  std::string signed_by;  // empty when not checked
  std::string expires;    // UTC ISO-8601
};
FetchedEntry read_entry_bundle(const store::Storage &target, const EntryBundleRequest &request, const LogCallback &log);

}  // namespace kiln::bundle
