#include "remote/cache.hpp"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <map>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "bundle/reader.hpp"
#include "bundle/trust_store.hpp"
#include "bundle/writer.hpp"
#include "files/files.hpp"
#include "store/names.hpp"
#include "remote/entry_verdict.hpp"
#include "remote/lease_holder.hpp"
#include "store/storage.hpp"
#include "support/elapsed.hpp"
#include "support/utc_time.hpp"

namespace kiln::remote {

namespace fs = boost::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

// Remotes that failed, by URL, for every RemoteCache of the process: a dead server costs its
// timeout once per process, not once per build.
struct FailedRemotes {
  std::mutex mutex;
  std::map<std::string, Clock::time_point> skip_until;
};
FailedRemotes &failed_remotes() {
  static FailedRemotes failed;
  return failed;
}

std::string cas_key(const std::string &consumer, const std::string &content_key) { return "cas/" + consumer + "/" + content_key; }
std::string ac_key(const std::string &consumer, const std::string &input_key) { return "ac/" + consumer + "/" + input_key; }
std::string lease_key(const std::string &consumer, const std::string &input_key) { return "lease/" + consumer + "/" + input_key; }

// Where a downloaded or uploaded bundle lives while it is checked or sent: a staging directory
// of the writable cache (store/staging.hpp), so that it goes with the Staging, and what a killed
// transfer leaves is swept as any dead writer's staging directory is, by its lock.
fs::path transfer_file(const store::Staging &staging) { return staging.dir() / "transfer.kbundle"; }

}  // namespace

struct RemoteCache::Slot {
  std::unique_ptr<Backend> backend;
  std::string url;  // display form
  std::mutex mutex;
};

RemoteCache::RemoteCache(RemoteConfig config, LogCallback log) : config_(std::move(config)), log_(std::move(log)) {
  for (const auto &endpoint : config_.remotes) {
    auto slot = std::make_unique<Slot>();
    slot->backend = make_backend(endpoint);
    slot->url = slot->backend->display_url();
    slots_.push_back(std::move(slot));
  }
}

RemoteCache::~RemoteCache() = default;

template <class Call>
auto RemoteCache::with(Slot &slot, const std::string &what, Call call, std::string *why) const
    -> std::optional<decltype(call(std::declval<Backend &>()))> {
  FailedRemotes &failed = failed_remotes();
  {
    std::lock_guard<std::mutex> guard(failed.mutex);
    const auto it = failed.skip_until.find(slot.url);
    if (it != failed.skip_until.end()) {
      if (Clock::now() < it->second) {
        if (why != nullptr) {
          *why = "skipped: it failed less than " + std::to_string(static_cast<long long>(config_.retry_after_s)) +
                 " s ago (retry_after; the log says why)";
        }
        return std::nullopt;
      }
      failed.skip_until.erase(it);
    }
  }
  try {
    std::lock_guard<std::mutex> guard(slot.mutex);
    return call(*slot.backend);
  } catch (const RemoteError &error) {
    if (why != nullptr) *why = error.what();
    {
      std::lock_guard<std::mutex> guard(failed.mutex);
      failed.skip_until[slot.url] =
          Clock::now() + std::chrono::milliseconds(static_cast<long long>(config_.retry_after_s * 1000));
    }
    if (log_) {
      log_(LogLevel::warning, "remote " + slot.url + ": " + what + " failed (" + error.what() + "); skipping it for " +
                                  std::to_string(static_cast<long long>(config_.retry_after_s)) +
                                  " s, the build proceeds without it");
    }
    return std::nullopt;
  }
}

std::optional<RemoteCache::Found> RemoteCache::fetch(const store::Storage &storage, const std::string &consumer,
                                                       const std::string &content_key, const std::string &input_key,
                                                       Slot &slot) const {
  const std::string key = cas_key(consumer, content_key);
  try {
    // The body goes straight into the transfer file as it arrives (bounded by the remote's
    // max_bytes), never whole in memory; the staging directory is made at its first byte, so a
    // miss writes nothing.
    std::optional<store::Staging> transfer;
    std::optional<files::StagingFileWriter> file;
    const auto found = with(slot, "GET " + key, [&](Backend &backend) {
      return backend.get_to(key, [&](const char *data, std::size_t size) {
        if (!transfer) {
          transfer.emplace(storage.stage(consumer, log_));
          file.emplace(transfer_file(*transfer), 0600);
        }
        file->append(data, size);
      });
    });
    if (!found || !*found || !transfer) return std::nullopt;  // an empty body is no bundle either
    const std::uint64_t bytes = file->written();
    file->close();
    const bundle::FetchedEntry entry = bundle::read_entry_bundle(
        storage,
        {transfer_file(*transfer).string(), consumer, content_key, input_key, config_.trusted_keys, true,
         config_.accept_unsigned, config_.entry_lifetime_s},
        log_);
    if (log_) {
      // An entry nobody vouched for is said at the default verbosity, not only in the details.
      const bool checked = !entry.signed_by.empty();
      log_(checked ? LogLevel::info : LogLevel::warning,
           "fetched " + consumer + " entry " + entry.content_key + " from " + slot.url + " (" +
               std::to_string(bytes) + " bytes, " +
               (checked ? "signed by " + entry.signed_by : std::string("signature not checked: accept-unsigned")) + ")");
    }
    return Found{entry.content_key, slot.url, bytes, entry.signed_by};
  } catch (const IoError &error) {
    // This machine could not store it (a full disk): the entry is not to blame. A miss too;
    // the staging directory went with its Staging.
    if (log_) {
      log_(LogLevel::warning, "remote " + slot.url + ": " + key + " fetched but not stored here: " + error.what() +
                                  "; the build proceeds without it");
    }
    return std::nullopt;
  } catch (const Error &error) {
    // A damaged, truncated, tampered or untrusted entry is a miss: never an error that stops
    // a build, never a load of the bad bytes (nothing was committed).
    // What every machine refuses the next upload replaces (upload): said where that is why.
    const bool judged = error.kind() == ErrorKind::integrity || error.kind() == ErrorKind::incompatible;
    const std::string replaced_by = !judged                       ? ""
                                    : config_.trusted_keys.empty() ? " -- the next upload of this entry replaces it"
                                                                   : " -- the next upload of this entry by a machine "
                                                                     "signing with a trusted key replaces it";
    if (log_) log_(LogLevel::warning, "remote " + slot.url + ": " + key + " refused: " + error.what() + replaced_by);
    return std::nullopt;
  }
}

std::optional<std::string> RemoteCache::pointer(Slot &slot, const std::string &consumer, const std::string &input_key) const {
  const std::string key = ac_key(consumer, input_key);
  const auto value = with(slot, "GET " + key, [&](Backend &backend) { return backend.get(key); });
  if (!value || !*value) return std::nullopt;
  if (!store::is_valid_key(**value)) {
    if (log_) log_(LogLevel::warning, "remote " + slot.url + ": " + key + " holds no content key (ignored)");
    return std::nullopt;
  }
  return **value;
}

bool RemoteCache::can_accept_entries(const store::Storage &storage) const {
  if (!config_.trusted_keys.empty() || config_.accept_unsigned) return true;
  try {
    if (bundle::read_trust(storage).active()) return true;
  } catch (const Error &) {
    return true;  // a damaged trust state: the fetch's own check refuses, and says why
  }
  std::call_once(said_nothing_vouches_, [&] {
    if (log_) {
      log_(LogLevel::warning, "remote caches are not asked for entries: no key is trusted to vouch for them (name the "
                              "build machines' public key with trust = PATH.pub in kiln.conf, pin the fleet's root "
                              "with kiln key trust, or set accept-unsigned = yes for a cache only you can write)");
    }
  });
  return false;
}

std::optional<RemoteCache::Found> RemoteCache::find_by_input_key(const store::Storage &storage, const std::string &consumer,
                                                                 const std::string &input_key) const {
  if (!can_accept_entries(storage)) return std::nullopt;
  for (const auto &slot : slots_) {
    const auto content_key = pointer(*slot, consumer, input_key);
    if (!content_key) continue;
    if (auto fetched = fetch(storage, consumer, *content_key, input_key, *slot)) return fetched;
  }
  return std::nullopt;
}

std::optional<RemoteCache::Found> RemoteCache::find_by_content_key(const store::Storage &storage, const std::string &consumer,
                                                                   const std::string &content_key) const {
  if (!can_accept_entries(storage)) return std::nullopt;
  for (const auto &slot : slots_) {
    if (auto fetched = fetch(storage, consumer, content_key, "", *slot)) return fetched;
  }
  return std::nullopt;
}

std::optional<std::string> RemoteCache::locate(const store::Storage &storage, const std::string &consumer,
                                               const std::string &input_key) const {
  if (!can_accept_entries(storage)) return std::nullopt;
  for (const auto &slot : slots_) {
    if (pointer(*slot, consumer, input_key)) return slot->url;
  }
  return std::nullopt;
}

std::optional<std::string> RemoteCache::replace_refused(Slot &slot, const std::string &key, const std::string &value,
                                                        const std::function<std::optional<std::string>(const std::string &)> &refusal,
                                                        std::string *failure) const {
  const auto current = with(slot, "GET " + key, [&](Backend &backend) { return backend.get(key); }, failure);
  if (!current) return std::nullopt;
  // Gone since (nothing to judge; the next upload writes it), or this very value: kept.
  if (!*current || **current == value) return std::string();
  std::optional<std::string> why;
  try {
    why = refusal(**current);
  } catch (const std::exception &error) {  // no verdict (a full disk, an unreadable trusted key): left as it is
    if (log_) log_(LogLevel::warning, "remote " + slot.url + ": " + key + " could not be judged (" + error.what() + "); left as it is");
    return std::string();
  }
  if (!why) return std::string();  // what it holds is accepted here: never overwritten
  const auto swapped = with(
      slot, "replace " + key, [&](Backend &backend) { return backend.replace(key, **current, value); }, failure);
  if (!swapped) return std::nullopt;
  if (!*swapped) {
    // Another writer changed it since it was read: theirs stays, and is judged by the next upload.
    if (log_) log_(LogLevel::info, "remote " + slot.url + ": " + key + " changed while this upload judged it; left as it is");
    return std::string();
  }
  return key + " (refused: " + *why + ")";
}

std::vector<RemoteTransfer> RemoteCache::offer(const store::Storage &storage, const Resolution &resolution) const {
  std::vector<RemoteTransfer> transfers;
  std::vector<Slot *> writable;
  for (const auto &slot : slots_) {
    if (!slot->backend->endpoint().read_only) writable.push_back(slot.get());
  }
  if (writable.empty()) return transfers;
  const auto report = [&](Slot &slot, const std::string &status, std::uint64_t bytes, const std::string &replaced = "") {
    transfers.push_back({resolution.consumer, resolution.name, resolution.content_key, resolution.input_key, slot.url,
                         status, bytes, replaced});
  };
  std::string bundle;
  try {
    const store::Staging transfer = storage.stage(resolution.consumer, log_);
    bundle::write_entry_bundle(resolution, transfer_file(transfer).string(), config_.signing_key,
                               config_.entry_lifetime_s);
    bundle = files::read_file(transfer_file(transfer), files::FileOrigin::store);
  } catch (const std::exception &error) {
    for (Slot *slot : writable) report(*slot, std::string("failed: ") + error.what(), 0);
    if (log_) log_(LogLevel::warning, "not uploading " + resolution.consumer + "/" + resolution.name + ": " + error.what());
    return transfers;
  }
  // An entry under cas is judged as the content key's (whatever input key its builder recorded:
  // equal outputs of other inputs are the same entry); one a pointer names, as a build of these inputs.
  const auto judge = [&](const std::string &body, const std::string &content_key, const std::string &input_key) {
    return judge_entry(storage, body, resolution.consumer, content_key, input_key, config_.trusted_keys,
                       config_.accept_unsigned, config_.entry_lifetime_s);
  };
  // What this machine refuses under its keys it replaces -- only with what it accepts itself:
  // judged once, on the first need. A machine whose own uploads it would refuse (its signing
  // key is none of its trusted keys) replaces nothing, and says so.
  std::optional<EntryVerdict> own;
  const auto may_replace = [&]() {
    if (!own) {
      try {
        own = judge(bundle, resolution.content_key, "");
      } catch (const std::exception &error) {
        own = EntryVerdict{std::string(error.what()), "", ""};
      }
      if (own->refusal && log_) {
        log_(LogLevel::warning, "not replacing refused remote entries with this machine's " + resolution.consumer + "/" +
                                    resolution.name + ": it refuses its own upload (" + *own->refusal +
                                    "): sign with a key among the trusted ones (KILN_REMOTE_SIGN, KILN_REMOTE_TRUST)");
      }
    }
    return !own->refusal;
  };
  const std::string entry = cas_key(resolution.consumer, resolution.content_key);
  // An accepted entry that expires soon is replaced too (the upload is the same entry, valid
  // for a lifetime from now): what the fleet still builds or pushes never expires on the remote.
  const auto entry_refusal = [&](const std::string &body) -> std::optional<std::string> {
    if (!may_replace()) return std::nullopt;
    const EntryVerdict verdict = judge(body, resolution.content_key, "");
    if (verdict.refusal) return verdict.refusal;
    const auto expires = support::parse_utc_time(verdict.expires);
    if (expires && *expires - std::time(nullptr) < config_.entry_lifetime_s / 10) {
      return "it expires at " + verdict.expires + ", within a tenth of the entry lifetime: refreshed";
    }
    return std::nullopt;
  };
  for (Slot *slot : writable) {
    std::string why;
    const auto wrote = with(
        *slot, "PUT " + entry, [&](Backend &backend) { return backend.put_new(entry, bundle); }, &why);
    if (!wrote) {
      report(*slot, "failed: " + why, 0);
      continue;
    }
    std::string replaced;
    if (!*wrote) {
      const auto outcome = replace_refused(*slot, entry, bundle, entry_refusal, &why);
      if (!outcome) {
        report(*slot, "failed: the entry was there, and could not be judged: " + why, 0);
        continue;
      }
      replaced = *outcome;
    }
    if (!resolution.input_key.empty()) {
      const std::string pointer = ac_key(resolution.consumer, resolution.input_key);
      const auto pointed = with(
          *slot, "PUT " + pointer,
          [&](Backend &backend) {
            if (backend.put_new(pointer, resolution.content_key)) return std::string();
            return backend.get(pointer).value_or("");
          },
          &why);
      if (!pointed) {
        report(*slot, "failed: the entry went up, its input-key pointer did not: " + why, 0);
        continue;
      }
      if (!pointed->empty() && *pointed != resolution.content_key) {
        // Another machine built these inputs into another content key first: both entries are
        // valid builds of the inputs, and its pointer stays -- unless it leads nowhere this
        // machine accepts (no content key, no entry, or one it refuses).
        const auto pointer_refusal = [&](const std::string &value) -> std::optional<std::string> {
          if (!may_replace()) return std::nullopt;
          if (!store::is_valid_key(value)) return std::string("it names no content key");
          const std::string target = cas_key(resolution.consumer, value);
          const auto body = with(*slot, "GET " + target, [&](Backend &backend) { return backend.get(target); });
          if (!body) return std::nullopt;  // no verdict from a remote that failed
          if (!*body) return "it names entry " + value + ", which the remote does not hold";
          const auto verdict = judge(**body, value, resolution.input_key).refusal;
          if (!verdict) return std::nullopt;
          return "it names entry " + value + ", which " + *verdict;
        };
        const auto outcome = replace_refused(*slot, pointer, resolution.content_key, pointer_refusal, &why);
        if (!outcome) {
          report(*slot, "failed: the entry went up, its input-key pointer could not be judged: " + why, 0);
          continue;
        }
        if (!outcome->empty()) {
          replaced += (replaced.empty() ? "" : "; ") + *outcome;
        } else if (log_) {
          log_(LogLevel::info, "remote " + slot->url + ": " + pointer + " already names " + pointed->substr(0, 64) +
                                   ", not " + resolution.content_key + " (kept)");
        }
      }
    }
    if (!replaced.empty()) {
      if (log_) {
        log_(LogLevel::warning, "remote " + slot->url + ": replaced " + replaced + " with this machine's upload of " +
                                    resolution.consumer + "/" + resolution.name + " (" +
                                    (own && !own->signed_by.empty() ? "signed by " + own->signed_by
                                                                    : std::string("no trusted keys configured")) +
                                    ")");
      }
      report(*slot, "replaced", bundle.size(), replaced);
      continue;
    }
    report(*slot, *wrote ? "uploaded" : "present", *wrote ? bundle.size() : 0);
  }
  if (log_) {
    for (const auto &transfer : transfers) {
      log_(LogLevel::info, "remote " + transfer.remote + ": " + transfer.consumer + "/" + transfer.name + " " +
                               transfer.content_key + " " + transfer.status);
    }
  }
  return transfers;
}

namespace {

// Renews the lease from its own thread until destroyed, then releases it.
class HeldLease final : public store::EntrySource::Claim {
 public:
  using Renew = std::function<void(bool release)>;
  HeldLease(double ttl_s, Renew renew) : renew_(std::move(renew)) {
    const auto every = std::chrono::milliseconds(static_cast<long long>(ttl_s * 1000 / 6));
    thread_ = std::thread([this, every] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!cv_.wait_for(lock, every, [this] { return stop_; })) {
        lock.unlock();
        renew_(false);
        lock.lock();
      }
    });
  }
  ~HeldLease() override {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    renew_(true);
  }

 private:
  Renew renew_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

constexpr double kLeaseTtlSeconds = 30;

}  // namespace

std::unique_ptr<store::EntrySource::Claim> RemoteCache::claim(const store::Storage &storage, const std::string &consumer,
                                                       const std::string &input_key, const CancelToken *cancel,
                                                       std::optional<Found> *fetched) const {
  Slot *slot = nullptr;
  for (const auto &candidate : slots_) {
    if (!candidate->backend->endpoint().read_only && candidate->backend->offers_leases()) {
      slot = candidate.get();
      break;
    }
  }
  // Nobody to agree with, or nothing another machine uploads could be taken here: build.
  if (slot == nullptr || !can_accept_entries(storage)) return nullptr;
  const std::string key = lease_key(consumer, input_key), holder = lease_holder_name();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(static_cast<long long>(config_.lease_wait_s * 1000));
  std::optional<std::string> seen;  // the holder's text, and since when it has not changed
  auto seen_since = start;
  auto pause = std::chrono::milliseconds(100);
  bool told = false;
  // Every round ends here, whatever the server answered: a server that keeps contradicting
  // itself (SET NX refused while GET finds no holder) costs lease_wait at most, and a cancel
  // ends the wait within one pause.
  const auto give_up = [&] {
    if (cancel != nullptr && cancel->cancelled()) return true;
    if (Clock::now() < deadline) return false;
    if (log_) log_(LogLevel::warning, consumer + " " + input_key + ": waited " + std::to_string(config_.lease_wait_s) +
                                          " s for another machine's build; building here");
    return true;
  };
  const auto wait = [&](std::chrono::milliseconds length) {
    const auto until = std::min(Clock::now() + length, deadline);
    while (Clock::now() < until && !(cancel != nullptr && cancel->cancelled())) {
      std::this_thread::sleep_for(std::min(std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(50)),
                                           until - Clock::now()));
    }
  };
  while (!give_up()) {
    const auto taken = with(*slot, "lease " + key, [&](Backend &backend) {
      return backend.acquire_lease(key, holder, kLeaseTtlSeconds);
    });
    if (!taken) return nullptr;  // the remote failed: build here
    if (*taken) {
      auto lease = std::make_unique<HeldLease>(kLeaseTtlSeconds, [this, slot, key, holder](bool release) {
        if (release) {  // on the building thread, as the lease goes
          with(*slot, "release " + key, [&](Backend &backend) {
            backend.release_lease(key, holder);
            return true;
          });
          return;
        }
        // On the lease's own thread: silent (the log callback belongs to the caller's threads). A
        // renewal that fails only lets another machine take over after the lease's ttl.
        try {
          std::lock_guard<std::mutex> guard(slot->mutex);
          slot->backend->renew_lease(key, holder, kLeaseTtlSeconds);
        } catch (const std::exception &) {
        }
      });
      // A holder that finished between our miss and this lease has uploaded: take that.
      if (auto entry = find_by_input_key(storage, consumer, input_key)) {
        *fetched = std::move(entry);
        return nullptr;  // the lease is released as it goes
      }
      return std::unique_ptr<Claim>(std::move(lease));
    }
    // Another machine builds these inputs: take its upload as soon as it is there.
    if (auto entry = find_by_input_key(storage, consumer, input_key)) {
      *fetched = std::move(entry);
      return nullptr;
    }
    const auto current = with(*slot, "lease " + key, [&](Backend &backend) { return backend.current_lease(key); });
    if (!current) return nullptr;
    if (!*current) {  // released meanwhile (its build failed, or it uploaded): look again soon
      wait(std::chrono::milliseconds(50));
      continue;
    }
    // A holder that is a gone process of this machine (a killed or crashed build: no 30 s wait for
    // it), or that was not renewed for a whole ttl by our own clock (HTTP leases do not expire).
    // Breaking races only with another waiter doing the same: then both build.
    const auto now = Clock::now();
    if (seen != **current) {
      seen = **current;
      seen_since = now;
    }
    const bool gone = lease_holder_gone(**current);
    if (gone || now - seen_since > std::chrono::milliseconds(static_cast<long long>(kLeaseTtlSeconds * 1000))) {
      if (log_) {
        log_(LogLevel::warning, "remote " + slot->url + ": lease " + key + " " +
                                    (gone ? "is held by " + (**current).substr(0, 120) + ", a process of this machine that is gone"
                                          : "was not renewed for " + std::to_string(static_cast<int>(kLeaseTtlSeconds)) + " s") +
                                    "; taking it over");
      }
      with(*slot, "break lease " + key, [&](Backend &backend) {
        backend.break_lease(key);
        return true;
      });
      seen.reset();
      wait(std::chrono::milliseconds(50));  // a break the server ignores must not become a busy loop
      continue;
    }
    if (!told && log_) {
      log_(LogLevel::info, consumer + " " + input_key + ": another machine builds it (" + (**current).substr(0, 120) +
                               " on " + slot->url + "); waiting for its upload");
      told = true;
    }
    wait(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
  return nullptr;
}

RemoteStatus RemoteCache::status() const {
  RemoteStatus status;
  status.config_file = config_.config_file;
  status.trusted_keys = config_.trusted_keys;
  status.signing_key = config_.signing_key;
  status.accept_unsigned = config_.accept_unsigned;
  status.entry_lifetime_s = config_.entry_lifetime_s;
  for (const auto &slot : slots_) {
    RemoteInfo info;
    const Endpoint &endpoint = slot->backend->endpoint();
    info.url = slot->url;
    info.read_only = endpoint.read_only;
    info.connect_timeout_s = endpoint.connect_timeout_s;
    info.timeout_s = endpoint.timeout_s;
    bool skipped = false;
    {
      FailedRemotes &failed = failed_remotes();
      std::lock_guard<std::mutex> guard(failed.mutex);
      const auto it = failed.skip_until.find(slot->url);
      skipped = it != failed.skip_until.end() && Clock::now() < it->second;
    }
    if (skipped) {
      info.state = "skipped";
      info.detail = "failed within the last " + std::to_string(static_cast<long long>(config_.retry_after_s)) + " s";
    } else {
      const auto start = Clock::now();
      try {
        std::lock_guard<std::mutex> guard(slot->mutex);
        info.detail = slot->backend->ping();
        info.state = "ok";
      } catch (const RemoteError &error) {
        info.state = "down";
        info.detail = error.what();
      }
      info.round_trip_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    }
    status.remotes.push_back(std::move(info));
  }
  return status;
}

}  // namespace kiln::remote
