// The cross-process trigger's watcher: a background thread (never a control thread) polls
// consumer/name's generation once per SwapOptions::watch_interval (a locked pread), and when it
// moved runs the transactional swap (to the requested content key, if the bump named one),
// then records what it did for `kiln swap` and calls on_watched_swap. Nothing leaves the thread.
#include "swap/core.hpp"

#include <algorithm>

#include <kiln/store.hpp>

namespace kiln {
namespace {

using swap::GenerationTable;
using swap::Outcome;
using swap_detail::who;

// "refused at step selftest: <reason>; version ... still serves" -> "selftest: <reason>"
std::string short_reason(const SwapError &error) {
  std::string text = error.what();
  const std::string marker = "refused at step " + error.step() + ": ";
  const auto at = text.find(marker);
  if (at != std::string::npos) text = text.substr(at + marker.size());
  const auto still = text.rfind("; version ");
  if (still != std::string::npos) text = text.substr(0, still);
  return error.step() + ": " + text;
}

}  // namespace

void SwapCore::Impl::prepare_watcher() noexcept {
  try {
    generations = GenerationTable::open_or_log(runtime.stores().back().root, runtime_log());
    if (generations) watched = generations->slot(options.consumer, options.name);
    const auto polled = watched ? generations->poll(*watched) : std::nullopt;
    if (!polled) {
      runtime.log(LogLevel::warning, "hot swap of " + who(options) +
                                         ": SwapOptions::watch is on but there is no cross-process trigger (see above); "
                                         "it swaps only when swap() is called");
      generations.reset();
      watched.reset();
      return;
    }
    seen_generation = polled->generation;
  } catch (const std::exception &error) {
    generations.reset();
    watched.reset();
    try {
      runtime.log(LogLevel::warning, "hot swap of " + who(options) + ": no cross-process trigger: " + error.what());
    } catch (...) {
    }
  }
}

void SwapCore::Impl::start_watcher() {
  if (!generations) return;
  watcher_record = generations->claim_record(*watched, seen_generation);
  last_resolved = resolved_key();
  watcher = std::thread([this] { watch_loop(); });
}

void SwapCore::Impl::stop_watcher() noexcept {
  {
    std::lock_guard<std::mutex> lock(watcher_mutex);
    watcher_stop = true;
  }
  watcher_wake.notify_all();
  if (watcher.joinable()) watcher.join();
  if (generations) generations->release_record(watcher_record);
  watcher_record = -1;
}

void SwapCore::Impl::watch_loop() noexcept {
  // About once a second, and whenever a poll cannot read it: did another process replace the
  // file (it found it damaged), or was it truncated in place (then it is replaced here)?
  const auto interval = std::max(options.watch_interval, std::chrono::milliseconds(1));
  const long check_every = std::max<long>(1, static_cast<long>(1000 / interval.count()));
  long polls = 0;
  std::unique_lock<std::mutex> lock(watcher_mutex);
  while (!watcher_stop) {
    if (watcher_wake.wait_for(lock, interval, [this] { return watcher_stop; })) break;
    const auto polled = generations->poll(*watched);
    const bool moved = polled && polled->generation != seen_generation;
    if (polled && !moved && ++polls % check_every != 0) continue;
    lock.unlock();
    if (moved) {
      handle_request(*polled);
      last_resolved = resolved_key();
    } else {
      reopen_if_replaced();
      notice_unbumped_change();
      if (watcher_record >= 0 && !generations->heartbeat(watcher_record)) {
        try {
          watcher_record = generations->claim_record(*watched, seen_generation);
        } catch (...) {
          watcher_record = -1;  // out of memory for its log line: acknowledgements go unrecorded
        }
      }
    }
    lock.lock();
  }
}

void SwapCore::Impl::handle_request(const swap::Request &asked) noexcept {
  seen_generation = asked.generation;
  const int record = watcher_record;
  auto notify = [this](const SwapReport &report, const Error *error) {
    if (!options.on_watched_swap) return;
    try {
      options.on_watched_swap(report, error);
    } catch (...) {
      // The host's callback threw; the watcher keeps watching.
    }
  };
  try {
    const std::string wanted = asked.content_key ? *asked.content_key : std::string("what it resolves to");
    try {
      SwapRequest request;
      if (asked.content_key) request.content_key = *asked.content_key;
      SwapReport report;
      {
        std::lock_guard<std::mutex> lock(mutex);
        report = swap_locked(request, nullptr);
      }
      generations->acknowledge(record, asked.generation, report.swapped ? Outcome::swapped : Outcome::unchanged, 0,
                               report.to_key);
      runtime.log(report.swapped ? LogLevel::info : LogLevel::debug,
                  "hot swap of " + who(options) + " (generation " + std::to_string(asked.generation) + "): " +
                      (report.swapped ? "now serving " : "already serving ") + report.to_key);
      notify(report, nullptr);
    } catch (const SwapError &error) {
      generations->acknowledge(record, asked.generation, Outcome::refused, static_cast<int>(error.kind()),
                               short_reason(error));
      runtime.log(LogLevel::warning, std::string(error.what()) + " (requested by generation " +
                                         std::to_string(asked.generation) + ")");
      notify(error.report(), &error);
    } catch (const Error &error) {
      generations->acknowledge(record, asked.generation, Outcome::refused, static_cast<int>(error.kind()), error.what());
      runtime.log(LogLevel::warning, "hot swap of " + who(options) + " to " + wanted + " refused: " + error.what());
      notify(SwapReport{}, &error);
    } catch (const std::exception &error) {
      const Error wrapped(ErrorKind::other, error.what());
      generations->acknowledge(record, asked.generation, Outcome::refused, static_cast<int>(ErrorKind::other),
                               error.what());
      runtime.log(LogLevel::warning, "hot swap of " + who(options) + " to " + wanted + " refused: " + error.what());
      notify(SwapReport{}, &wrapped);
    }
  } catch (...) {
    // Logging itself failed (out of memory): the next bump is tried again.
  }
}

std::string SwapCore::Impl::resolved_key() const noexcept {
  try {
    return runtime.resolve(options.consumer, options.name).content_key;
  } catch (...) {
    return "";  // absent or unreadable for now: compared again at the next look
  }
}

void SwapCore::Impl::notice_unbumped_change() noexcept {
  const std::string now = resolved_key();
  if (now.empty() || now == last_resolved) return;
  const bool first_look = last_resolved.empty();
  try {
    last_resolved = now;
    if (first_look) return;
    SwapReport report;
    {
      std::lock_guard<std::mutex> lock(mutex);
      report = swap_locked(SwapRequest{}, nullptr);
    }
    runtime.log(LogLevel::info, "hot swap of " + who(options) + ": the manifest names " + now +
                                    " with no swap trigger bump (its writer died before bumping): " +
                                    (report.swapped ? "now serving " : "already serving ") + report.to_key);
    if (options.on_watched_swap) options.on_watched_swap(report, nullptr);
  } catch (const SwapError &error) {
    try {
      runtime.log(LogLevel::warning, std::string(error.what()) + " (the manifest changed with no bump)");
      if (options.on_watched_swap) options.on_watched_swap(error.report(), &error);
    } catch (...) {
    }
  } catch (...) {
    // Refused for another reason or the host's callback threw: the watcher keeps watching.
  }
}

void SwapCore::Impl::reopen_if_replaced() noexcept {
  if (generations->current()) return;
  try {
    auto table = GenerationTable::open_or_log(runtime.stores().back().root, runtime_log());
    const auto slot = table ? table->slot(options.consumer, options.name) : std::nullopt;
    if (!slot) return;  // keep polling the old file; tried again at the next poll
    generations->release_record(watcher_record);
    generations = std::move(table);
    watched = slot;
    // Every bump the new file holds came after the old one was replaced: handled next poll.
    seen_generation = 0;
    watcher_record = generations->claim_record(*watched, 0);
    runtime.log(LogLevel::info, "hot swap of " + who(options) + ": the swap trigger table " + generations->file() +
                                    " was replaced or truncated; watching the new one");
  } catch (...) {
  }
}

}  // namespace kiln
