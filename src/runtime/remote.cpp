// Runtime's remote-cache verbs: status and push (kiln/remote.hpp).
#include <kiln/remote.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>

#include <boost/filesystem/operations.hpp>

#include "bundle/release_versions.hpp"
#include "runtime/state.hpp"
#include "store/names.hpp"
#include "remote/configured.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

std::shared_ptr<const remote::RemoteCache> configured_remotes(const Runtime::State &state) {
  auto remote = state.remotes->get();
  if (!remote) {
    throw UsageError("no remote cache is configured: set KILN_REMOTE (e.g. http://build1:8080/kiln) or add "
                     "`remote = URL` lines to kiln.conf in the cache directory " + state.writable().root().string());
  }
  return remote;
}

}  // namespace

RemoteStatus Runtime::remote_status() const try {
  const auto remote = state_->remotes->get();
  if (!remote) {
    RemoteStatus status;
    status.entry_lifetime_s = bundle::kDefaultEntryLifetimeSeconds;  // no remote it applies to: the default
    const auto &file = state_->remotes->config_file();
    if (boost::filesystem::exists(file)) status.config_file = file.string();
    return status;
  }
  return remote->status();
} catch (...) {
  support::rethrow_typed("asking the remote caches");
}

std::vector<RemoteTransfer> Runtime::remote_push(const std::string &consumer, const std::vector<std::string> &names) const try {
  store::validate_name("consumer", consumer);
  const auto remote = configured_remotes(*state_);
  bool writable = false;
  for (const auto &endpoint : remote->config().remotes) writable = writable || !endpoint.read_only;
  if (!writable) {
    throw UsageError("every configured remote cache is read-only for this machine: nothing can be pushed (a machine "
                     "writes to a remote when it signs its uploads -- sign = PATH.key in kiln.conf, or "
                     "KILN_REMOTE_SIGN -- and the remote does not say read-only, or when the remote says read-write)");
  }
  std::vector<std::string> pushed = names;
  if (pushed.empty()) {
    for (const auto &summary : state_->storage->list(consumer)) {
      if (!summary.shadowed) pushed.push_back(summary.name);
    }
    if (pushed.empty()) throw NotFoundError("consumer " + consumer + " has no artifacts in the stores: nothing to push");
  }
  std::vector<RemoteTransfer> transfers;
  for (const auto &name : pushed) {
    const auto resolution = state_->storage->resolve(consumer, name);
    for (auto &transfer : remote->offer(*state_->storage, *resolution)) transfers.push_back(std::move(transfer));
  }
  return transfers;
} catch (...) {
  support::rethrow_typed("pushing " + consumer + " to the remote caches");
}

}  // namespace kiln
