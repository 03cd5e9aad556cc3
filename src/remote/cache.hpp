// The fleet cache's flow (kiln/remote.hpp): what a build asks the remotes, what it trusts from
// them and what it gives them. Backends (remote/backend.hpp) only move bytes; this file
// decides. A remote entry is a one-entry bundle (bundle/writer.hpp) under
// cas/<consumer>/<content key>, found by input key through ac/<consumer>/<input key> (its
// content key as text). What comes back is verified as an import is, against the trusted
// keys, and must be the entry asked for (its signed index names the consumer, the content
// key and the input key); anything else is a miss, logged with the reason.
//
// Never in the way: a remote that fails (RemoteError: down, timeout, 5xx, garbage) is skipped
// by every RemoteCache of the process for retry_after seconds, so a dead server costs its
// timeout once; nothing here throws for a remote's sake.
//
// Threads: any thread; each backend is used by one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <kiln/cancel.hpp>
#include <kiln/log.hpp>
#include <kiln/module.hpp>
#include <kiln/remote.hpp>

#include "remote/config.hpp"
#include "store/entry_source.hpp"

namespace kiln::remote {

class RemoteCache final : public store::EntrySource {
 public:
  RemoteCache(RemoteConfig config, LogCallback log);
  ~RemoteCache();

  const RemoteConfig &config() const { return config_; }

  // The entry ac/<consumer>/<input_key> names, from the first remote that has it, committed
  // into `storage`'s writable cache (no name, no pointer: the caller points). The content key
  // and the remote's URL; nullopt when no remote has it or what came was refused (logged).
  std::optional<Found> find_by_input_key(const store::Storage &storage, const std::string &consumer,
                                         const std::string &input_key) const override;
  // The same by content key (cas only): once a build knows its content key.
  std::optional<Found> find_by_content_key(const store::Storage &storage, const std::string &consumer,
                                           const std::string &content_key) const override;
  // The first remote that has ac/<consumer>/<input_key> (a GET of the pointer only): for plan.
  std::optional<std::string> locate(const store::Storage &storage, const std::string &consumer,
                                    const std::string &input_key) const override;

  // The entry `resolution` names, to every read-write remote: cas (unless present), then the
  // ac pointer when it has an input key. Never throws; each remote's outcome is reported.
  // Remote writes never overwrite, with one exception that keeps a key planted by someone who
  // can write but not sign from poisoning the fleet for good: where a key is taken, what it
  // holds is judged as a fetch here would judge it, and what this machine refuses (an entry
  // signed by a key it does not trust, unsigned while keys are trusted, damaged, of another
  // entry; a pointer to no entry or to a refused one) is replaced by a compare-and-swap
  // (Backend::replace) -- only with an upload this machine accepts itself. What it accepts is
  // never overwritten. Reported as "replaced", with what and why.
  std::vector<RemoteTransfer> offer(const store::Storage &storage, const Resolution &resolution) const override;

  // Before building input_key: with no other machine building it, a lease on the first
  // read-write remote whose server offers leases (or none: build anyway). With another
  // machine's lease live, waits -- polling for its upload -- until the entry can be fetched
  // (*fetched set, no lease), the lease is released or abandoned (then it is taken), the
  // wait exceeds lease_wait, or `cancel` fires (UsageError-free: a cancel ends the wait and the
  // caller's own cancel check stops the build). Whatever the server answers, the wait ends by
  // lease_wait and within a pause of a cancel: every round checks both.
  std::unique_ptr<Claim> claim(const store::Storage &storage, const std::string &consumer, const std::string &input_key,
                               const CancelToken *cancel, std::optional<Found> *fetched) const override;

  RemoteStatus status() const;

 private:
  struct Slot;
  // call(backend) on the slot, unless it failed within retry_after; nullopt when skipped or when
  // the call failed (logged, the slot skipped from now on), and then why into *why when given.
  template <class Call>
  auto with(Slot &slot, const std::string &what, Call call, std::string *why = nullptr) const
      -> std::optional<decltype(call(std::declval<Backend &>()))>;
  // The content key ac/<consumer>/<input_key> names on `slot`; nullopt: none, or not a key (logged).
  std::optional<std::string> pointer(Slot &slot, const std::string &consumer, const std::string &input_key) const;
  // When `key` on `slot` holds a value `refusal` refuses (it says why; nullopt: accepted),
  // replaces it with `value` unless it changed meanwhile: what was replaced and why ("" for
  // nothing); nullopt when the remote failed (why into *failure).
  std::optional<std::string> replace_refused(Slot &slot, const std::string &key, const std::string &value,
                                             const std::function<std::optional<std::string>(const std::string &)> &refusal,
                                             std::string *failure) const;
  std::optional<Found> fetch(const store::Storage &storage, const std::string &consumer, const std::string &content_key,
                               const std::string &input_key, Slot &slot) const;
  // Whether anything could vouch for a fetched entry: a trusted key, a root `storage` pins, or
  // accept-unsigned. Without, nothing is downloaded (said once per RemoteCache).
  bool can_accept_entries(const store::Storage &storage) const;

  RemoteConfig config_;
  LogCallback log_;
  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::once_flag said_nothing_vouches_;
};

}  // namespace kiln::remote
