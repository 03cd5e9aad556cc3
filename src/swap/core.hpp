// SwapCore's state: the resident versions (serving first), the versions waiting for their grace
// period, the readers' domain and the watcher. Shared by core.cpp (the transaction) and
// watcher.cpp (the cross-process trigger).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <kiln/swap.hpp>

#include "swap/domain.hpp"
#include "swap/generations.hpp"
#include "swap/version.hpp"


namespace kiln {

struct SwapCore::Impl {
  Impl(Runtime &runtime, SwapOptions options);

  Runtime &runtime;
  SwapOptions options;
  std::shared_ptr<swap_detail::Domain> domain;

  // Serializes swap, rollback, collect and resident(); never taken by a reader.
  mutable std::mutex mutex;
  std::deque<std::unique_ptr<swap_detail::Version>> resident;  // [0] serves
  struct Retiring {
    std::unique_ptr<swap_detail::Version> version;
    std::uint64_t period;  // retired once every reader passed it
  };
  std::vector<Retiring> retiring;
  // Versions a call did not return from within its deadline (SwapDeadlines): never served;
  // retired by retire_locked once the call returned, leaked on purpose if it never does.
  std::vector<std::unique_ptr<swap_detail::Version>> quarantine;
  void quarantine_version(std::unique_ptr<swap_detail::Version> version) noexcept;
  // Retires `version` under the retire deadline, into `retired` when it went; a version a call
  // is still inside of, or whose destroy did not return, goes to the quarantine instead. Throws
  // (out of memory) only before it touched the version.
  bool retire_or_quarantine(std::unique_ptr<swap_detail::Version> &version, RetiredVersion &retired);
  std::uint64_t next_serial = 1;  // of the next version loaded

  // The transaction (core.cpp); the lock is held.
  SwapReport swap_locked(const SwapRequest &request, const std::string *to_resident_key);
  // Retires what is past keep_resident and what waited for a grace period now passed; what
  // cannot be retired now (a reader, no memory) stays pending, and the report says which.
  void retire_locked(SwapReport &report) noexcept;
  void retire_all() noexcept;
  // Names the readers that held `period` back into the report (held_back_by) and `detail`.
  void name_lagging_readers(std::uint64_t period, SwapReport &report, std::string &detail) const noexcept;
  LogCallback runtime_log() const;

  // The watcher (watcher.cpp). prepare_watcher opens the table and notes the generation before
  // the first version is resolved (a bump landing meanwhile is then seen as new); start_watcher
  // records this process as a watcher and starts the thread. Without a table (no writable
  // cache, a full table: logged) there is no watcher and swap() still works.
  void prepare_watcher() noexcept;
  void start_watcher();
  void stop_watcher() noexcept;
  void watch_loop() noexcept;
  void handle_request(const swap::Request &asked) noexcept;
  void reopen_if_replaced() noexcept;
  // A writer killed between its manifest rename and its bump (import.after_manifest; publish and
  // build have the same window) tells no watcher. Once a second the watcher compares what
  // consumer/name resolves to with what it resolved to at the last look and, when that moved
  // with no bump, swaps as for a bump (no generation to acknowledge). A version pinned by
  // `kiln swap --to` stays: only a change of the manifest's answer counts.
  void notice_unbumped_change() noexcept;
  std::string resolved_key() const noexcept;  // what consumer/name resolves to now; "" when it cannot
  std::string last_resolved;
  std::shared_ptr<swap::GenerationTable> generations;
  std::optional<swap::SlotId> watched;
  int watcher_record = -1;
  std::uint64_t seen_generation = 0;
  std::thread watcher;
  std::mutex watcher_mutex;
  std::condition_variable watcher_wake;
  bool watcher_stop = false;
};

}  // namespace kiln
