// The swap transaction: resolve or build -> load -> create -> activate -> interface ->
// self-test -> shadow -> state -> publish -> grace -> retire. Everything before publish happens
// beside the serving version; a failure there throws SwapError and changes nothing readers see.
#include "swap/core.hpp"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <memory>
#include <sstream>

#include <kiln/recipe.hpp>

#include "load/boundary.hpp"
#include "support/elapsed.hpp"
#include "support/failure_point.hpp"

namespace kiln {
namespace {

using swap_detail::StepFailure;
using swap_detail::Version;
using swap_detail::run_step;
using support::Clock;
using support::ms_since;
using swap_detail::who;

SwapOptions checked(SwapOptions options) {
  if (options.consumer.empty() || options.name.empty()) {
    throw UsageError("hot swap needs a consumer and a name (SwapOptions::consumer, ::name)");
  }
  if (options.interface_id.empty()) {
    throw UsageError("hot swap of " + who(options) + " needs the interface it serves (SwapOptions::interface_id, e.g. "
                     "\"kiln.ik/1\")");
  }
  if (options.keep_resident == 0) {
    throw UsageError("SwapOptions::keep_resident for " + who(options) + " is 0: the serving version counts, use 1 or more");
  }
  if (options.max_readers == 0) throw UsageError("SwapOptions::max_readers for " + who(options) + " is 0");
  if (options.interface_min_size < sizeof(std::uint32_t)) options.interface_min_size = sizeof(std::uint32_t);
  return options;
}

// export_state of the serving version -> import_state into the candidate. The serving version
// keeps serving meanwhile: its export runs beside the control thread's calls (abi/README.md §7).
// Runs on a worker thread under SwapDeadlines::state: `from` and `to` outlive it (quarantined
// when it does not return), and `bytes` is shared with the swap.
std::string carry_state(const Version &from, Version &to, const std::shared_ptr<std::size_t> &bytes) {
  const kiln_plugin_entry &exporter = from.module.entry();
  const kiln_plugin_entry &importer = to.module.entry();
  if (exporter.export_state == nullptr) return "none: the serving version exports no state";
  char message[1024] = "";
  std::size_t size = 0;
  kiln_status status = load::call_plugin(from.file, "export_state", [&] {
    return exporter.export_state(from.instance->handle(), nullptr, 0, &size, message, sizeof message);
  });
  if (status == KILN_ERR_UNSUPPORTED) return "none: the serving version keeps no state";
  if (status != KILN_OK) {
    throw AbiError("the serving version " + from.content_key + " could not size its state (status " +
                   std::to_string(status) + "): " + load::message_text(message));
  }
  if (size == 0) return "none: the serving version's state is empty";
  std::vector<unsigned char> blob(size);
  std::size_t written = 0;
  status = load::call_plugin(from.file, "export_state", [&] {
    return exporter.export_state(from.instance->handle(), blob.data(), blob.size(), &written, message, sizeof message);
  });
  if (status != KILN_OK || written > blob.size()) {
    throw AbiError("the serving version " + from.content_key + " could not export its state (status " +
                   std::to_string(status) + "): " + load::message_text(message));
  }
  if (importer.import_state == nullptr) {
    throw AbiError("version " + to.content_key + " cannot import state (no import_state) and the serving version has " +
                   std::to_string(written) + " bytes of it; swap with SwapOptions::carry_state = false to start it cold");
  }
  message[0] = '\0';
  status = load::call_plugin(to.file, "import_state", [&] {
    return importer.import_state(to.instance->handle(), blob.data(), written, message, sizeof message);
  });
  if (status != KILN_OK) {
    throw AbiError("version " + to.content_key + " refused the serving version's state (" + std::to_string(written) +
                   " bytes, status " + std::to_string(status) + "): " + load::message_text(message) +
                   "; it is not served: make it read the old format, or swap with carry_state = false");
  }
  *bytes = written;
  return std::to_string(written) + " bytes carried";
}

}  // namespace

SwapCore::Impl::Impl(Runtime &rt, SwapOptions opts)
    : runtime(rt), options(checked(std::move(opts))),
      domain(std::make_shared<swap_detail::Domain>(options.max_readers)) {}

SwapReport SwapCore::Impl::swap_locked(const SwapRequest &request, const std::string *to_resident_key) {
  const auto start = Clock::now();
  SwapReport report;
  Version *serving = resident.empty() ? nullptr : resident.front().get();
  if (serving != nullptr) report.from_key = serving->content_key;
  std::string consumer = options.consumer;
  std::string name = request.name.empty() ? options.name : request.name;
  std::string key = to_resident_key != nullptr ? *to_resident_key : std::string();
  std::unique_ptr<Version> fresh;
  Version *candidate = nullptr;
  SwapStep publish_step, grace_passed, grace_deferred;  // made before publish (see there)
  try {
    if (to_resident_key == nullptr && request.recipe) {
      run_step(report.steps, "build", [&] {
        const BuildResult built = runtime.build(*request.recipe, request.build);
        consumer = built.consumer;
        name = built.name;
        key = built.content_key;
        return std::string(to_string(built.outcome)) + " " + key;
      });
      if (consumer != options.consumer) {
        throw StepFailure{"build", ErrorKind::usage,
                          "the recipe builds " + consumer + "/" + name + ", another consumer than the swapped " +
                              who(options) + ": a swap serves versions of one consumer's interface"};
      }
    } else if (to_resident_key == nullptr && !request.content_key.empty()) {
      key = request.content_key;  // an entry of the consumer: resident, else found in the stores below
    } else if (to_resident_key == nullptr) {
      run_step(report.steps, "resolve", [&] {
        key = runtime.resolve(consumer, name).content_key;
        return consumer + "/" + name + " -> " + key;
      });
    }
    if (serving != nullptr && key == serving->content_key) {
      report.to_key = key;
      report.serial = serving->served.serial;
      report.total_ms = ms_since(start);
      return report;  // already serving: nothing to do
    }
    auto found = std::find_if(resident.begin(), resident.end(), [&](const auto &v) { return v->content_key == key; });
    if (found != resident.end()) {
      candidate = found->get();
      report.was_resident = true;
      // A resident version whose grace period never passed (a reader held on past grace_timeout)
      // may still be called by that reader: its self-test and import_state must wait for it.
      if (candidate->unused_after != 0 && !domain->passed(candidate->unused_after)) {
        run_step(report.steps, "grace", [&] {
          if (!domain->wait(candidate->unused_after, options.grace_timeout)) {
            throw StepFailure{"grace", ErrorKind::other,
                              "a control thread still holds version " + candidate->content_key +
                                  " from before it stopped serving (it has not passed a quiescent point within " +
                                  std::to_string(options.grace_timeout.count()) +
                                  " ms): call quiescent() every cycle, or offline() while not cycling, and swap again"};
          }
          return std::string("the readers let go of the resident version");
        });
      }
      run_step(report.steps, "selftest", [&] { return swap_detail::run_selftest(*candidate, options); });
    } else {
      std::optional<Module> module;
      const bool by_key = to_resident_key == nullptr && !request.recipe && !request.content_key.empty();
      if (by_key) {
        run_step(report.steps, "resolve", [&] {
          const Resolution entry = runtime.resolve_entry(consumer, name, key);
          return "entry " + key + " (" + entry.consumer + "/" + entry.name + ") in " + entry.store_root;
        });
      }
      run_step(report.steps, "load", [&] {
        module.emplace(by_key ? runtime.load_entry(consumer, name, key, options.load)
                              : runtime.load(consumer, name, options.load));
        const Resolution &loaded = module->report().resolution;
        key = loaded.content_key;  // the manifest may have moved since resolve: what loaded counts
        std::ostringstream detail;
        detail << loaded.file << " (" << module->report().timings.total_ms() << " ms)";
        return detail.str();
      });
      fresh = swap_detail::make_version(std::move(*module));
      candidate = fresh.get();
      swap_detail::prepare_version(*fresh, options, next_serial++, report.steps);
    }
    if (serving != nullptr && request.shadow) {
      run_step(report.steps, "shadow", [&] {
        // The host's check calls both versions; it gets copies, as it may outlive this swap.
        return swap_detail::with_deadline(
            "shadow", "the shadow check (SwapRequest::shadow)", options.deadlines.shadow, {candidate, serving},
            [shadow = request.shadow, from = serving, to = candidate] {
              const auto difference = shadow(from->served, to->served);
              if (difference) {
                throw AbiError("the shadow check found version " + to->content_key + " disagreeing with the serving " +
                               from->content_key + ": " + *difference);
              }
              return std::string("agreed");
            });
      });
    }
    if (serving != nullptr && options.carry_state) {
      run_step(report.steps, "state", [&] {
        auto bytes = std::make_shared<std::size_t>(0);
        std::string detail = swap_detail::with_deadline(
            "state", "export_state/import_state", options.deadlines.state, {candidate, serving},
            [from = serving, to = candidate, bytes] { return carry_state(*from, *to, bytes); });
        report.state_bytes = *bytes;
        return detail;
      });
    }
    // From publish until the old version's grace period is recorded nothing may throw: a failure
    // there would leave the old version looking unused (unused_after 0) while a reader holds it,
    // and collect() would retire it under that reader. So whatever publishing needs (the
    // resident list's room, the report's lines) is made here, where a failure still refuses.
    try {
      KILN_FAILURE_POINT("swap.publish");
      report.steps.reserve(report.steps.size() + 3);  // publish, grace, retire
      report.to_key = candidate->content_key;
      retiring.reserve(retiring.size() + resident.size() + 1);
      publish_step = SwapStep{"publish", 0, "serial " + std::to_string(candidate->served.serial)};
      grace_passed = SwapStep{"grace", 0, "every reader passed a quiescent point"};
      grace_deferred = SwapStep{"grace", 0,
                                "a reader did not pass a quiescent point within " +
                                    std::to_string(options.grace_timeout.count()) + " ms: retirement deferred (collect())"};
      if (fresh) resident.push_front(std::move(fresh));  // last: when it throws, fresh still owns the version
    } catch (const std::exception &error) {
      throw StepFailure{"publish", ErrorKind::other, std::string("out of memory before publishing (") + error.what() + ")"};
    }
  } catch (const StepFailure &failure) {
    report.to_key = key;
    report.total_ms = ms_since(start);
    // A version a call is still inside of is never served and never unloaded under that call.
    if (fresh && fresh->busy()) {
      quarantine_version(std::move(fresh));
    } else if (candidate != nullptr && candidate != serving && candidate->busy()) {
      auto found = std::find_if(resident.begin(), resident.end(), [&](const auto &v) { return v.get() == candidate; });
      if (found != resident.end()) {
        std::unique_ptr<Version> stuck = std::move(*found);
        resident.erase(found);
        quarantine_version(std::move(stuck));
      }
    }
    report.quarantined = quarantine.size();
    if (fresh && fresh->registers_cuda_runtime) {
      try {
        fresh->module.keep_mapped();
      } catch (const Error &) {
      }
    }
    std::string message = "hot swap of " + who(options) + (key.empty() ? std::string() : " to " + key) +
                          " refused at step " + failure.step + ": " + failure.message;
    message += serving != nullptr ? "; version " + serving->content_key + " still serves" : "; nothing is served";
    throw SwapError(failure.kind, message, failure.step, report, failure.deadline);
  }

  // Publish: from the next acquire() on, readers get the candidate. Nothing below throws.
  const auto publish_start = Clock::now();
  auto found = std::find_if(resident.begin(), resident.end(), [&](const auto &v) { return v.get() == candidate; });
  std::rotate(resident.begin(), found, found + 1);  // the candidate serves: first
  domain->publish(&candidate->served);
  if (serving != nullptr) serving->unused_after = domain->advance();  // its grace period, before anything else
  candidate->unused_after = 0;
  report.swapped = true;
  report.serial = candidate->served.serial;
  report.total_ms = ms_since(start);
  publish_step.ms = ms_since(publish_start);
  report.steps.push_back(std::move(publish_step));

  if (serving != nullptr) {
    const auto grace_start = Clock::now();
    const bool passed = domain->wait(serving->unused_after, options.grace_timeout);
    SwapStep &grace = passed ? grace_passed : grace_deferred;
    grace.ms = ms_since(grace_start);
    if (!passed) name_lagging_readers(serving->unused_after, report, grace.detail);
    report.steps.push_back(std::move(grace));
  }
  retire_locked(report);
  return report;
}

void SwapCore::Impl::name_lagging_readers(std::uint64_t period, SwapReport &report, std::string &detail) const noexcept {
  try {
    for (const swap_detail::LaggingReader &reader : domain->lagging(period)) {
      std::string line = "reader " + std::to_string(reader.index);
      if (reader.thread_exited) {
        line += ": its thread " + std::to_string(reader.thread) +
                " has exited with the reader online; destroy the SwapReader or call offline() before the thread ends";
      } else if (reader.thread != 0) {
        line += " (thread " + std::to_string(reader.thread) + ")";
      }
      detail += (report.held_back_by.empty() ? ": " : "; ") + line;
      report.held_back_by.push_back(std::move(line));
    }
  } catch (...) {
    // No memory to name them: the step still says the grace period was not reached.
  }
}

void SwapCore::Impl::quarantine_version(std::unique_ptr<Version> version) noexcept {
  try {
    quarantine.push_back(std::move(version));
  } catch (...) {
    // No room to keep it here: kept for the process's life, since destroying it under a running
    // call would unload code that call is executing.
    swap_detail::keep_for_process(std::move(version));
  }
}

bool SwapCore::Impl::retire_or_quarantine(std::unique_ptr<Version> &version, RetiredVersion &retired) {
  if (!version->busy() && swap_detail::retire(version, retired, runtime_log(), options.deadlines.retire)) return true;
  quarantine_version(std::move(version));
  return false;
}

void SwapCore::Impl::retire_locked(SwapReport &report) noexcept {
  const auto start = Clock::now();
  while (resident.size() > options.keep_resident) {
    if (retiring.size() == retiring.capacity()) {
      try {
        retiring.reserve(retiring.size() + 1);
      } catch (...) {
        break;  // no room: it stays resident (and unused) until the next swap or collect()
      }
    }
    Retiring entry{nullptr, resident.back()->unused_after};
    entry.version = std::move(resident.back());
    resident.pop_back();
    retiring.push_back(std::move(entry));
  }
  // A retirement that fails (out of memory) fails before it touches the version: it stays
  // pending and the next swap or collect() tries again. Never half-retired.
  const std::size_t before = report.retired.size();
  std::size_t failed = 0;
  std::string why;
  for (auto it = retiring.begin(); it != retiring.end();) {
    if (!domain->passed(it->period)) {
      ++it;
      continue;
    }
    try {
      report.retired.emplace_back();
      try {
        if (!retire_or_quarantine(it->version, report.retired.back())) report.retired.pop_back();
      } catch (...) {
        report.retired.pop_back();
        throw;
      }
      it = retiring.erase(it);
    } catch (const std::exception &error) {
      ++failed;
      ++it;
      try {
        why = error.what();
      } catch (...) {
      }
    }
  }
  // Quarantined versions whose stuck call has returned (and whose grace period, for one that
  // once served, has passed) are retired now.
  for (std::size_t i = 0; i < quarantine.size();) {
    const Version &version = *quarantine[i];
    if (version.busy() || (version.unused_after != 0 && !domain->passed(version.unused_after))) {
      ++i;
      continue;
    }
    try {
      report.retired.emplace_back();
      bool gone = false;
      try {
        gone = swap_detail::retire(quarantine[i], report.retired.back(), runtime_log(), options.deadlines.retire);
      } catch (...) {
        report.retired.pop_back();
        throw;
      }
      if (gone) {
        quarantine.erase(quarantine.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        report.retired.pop_back();  // its destroy did not return either: it stays, busy again
        ++i;
      }
    } catch (...) {
      break;  // no memory: it stays quarantined; the next swap or collect() tries again
    }
  }
  report.retire_pending = retiring.size();
  report.quarantined = quarantine.size();
  try {
    if (report.retired.size() != before || report.retire_pending != 0 || report.quarantined != 0) {
      std::ostringstream detail;
      detail << report.retired.size() - before << " retired";
      if (report.retire_pending > failed) detail << ", " << report.retire_pending - failed << " waiting for a reader";
      if (report.quarantined != 0) detail << ", " << report.quarantined << " quarantined (a call into it has not returned)";
      if (failed != 0) detail << ", " << failed << " could not be retired (" << why << "): pending, tried again by the next swap or collect()";
      report.steps.push_back({"retire", ms_since(start), detail.str()});
    }
  } catch (...) {
    // The report's line could not be made: retire_pending says what is left.
  }
}

LogCallback SwapCore::Impl::runtime_log() const {
  Runtime *rt = &runtime;
  return [rt](LogLevel level, const std::string &line) { rt->log(level, line); };
}

void SwapCore::Impl::retire_all() noexcept {
  // From here on acquire() returns the retired state (no table, serial 0): a reader still
  // cycling sees it instead of a version being unloaded. Readers get the grace timeout to pass a
  // quiescent point; a reader holding a version past it is logged and its version goes anyway.
  domain->publish(&swap_detail::kRetiredVersion);
  const std::uint64_t period = domain->advance();
  if (!domain->wait(period, options.grace_timeout)) {
    try {
      runtime.log(LogLevel::warning, "hot swap of " + who(options) +
                                         ": destroyed while a reader still held a version past the grace timeout; "
                                         "its versions are unloaded anyway");
    } catch (...) {
    }
  }
  auto drop = [&](std::unique_ptr<Version> &version) {
    RetiredVersion ignored;
    try {
      retire_or_quarantine(version, ignored);
    } catch (...) {
      if (version->busy()) {
        quarantine_version(std::move(version));
      } else {
        version.reset();  // no memory to report it: destroyed and unloaded all the same
      }
    }
  };
  std::vector<std::unique_ptr<Version>> earlier = std::move(quarantine);
  quarantine.clear();
  for (auto &version : resident) drop(version);
  for (auto &pending : retiring) drop(pending.version);
  for (auto &version : earlier) {
    if (!version->busy()) drop(version);  // its call returned: retired as any other
  }
  resident.clear();
  retiring.clear();
  // What a call is still inside of (a stuck create, activate, self-test, state or destroy) is
  // leaked on purpose rather than handed to its detached thread: that thread cannot be joined or
  // stopped, destroying or unloading the version under it would pull code and memory from under
  // a running call, and a retirement running on it after this Swappable (and maybe the Runtime
  // or the process's static state) is gone could not be made safe. It stays mapped for the
  // process's life; its thread ends on its own if the call ever returns.
  std::size_t leaked = 0;
  auto leak = [&](std::unique_ptr<Version> &version) {
    if (version) {
      swap_detail::keep_for_process(std::move(version));
      ++leaked;
    }
  };
  for (auto &version : earlier) leak(version);
  for (auto &version : quarantine) leak(version);
  quarantine.clear();
  if (leaked != 0) {
    try {
      runtime.log(LogLevel::warning, "hot swap of " + who(options) + ": destroyed while " + std::to_string(leaked) +
                                         " version(s) had a call into plugin code that never returned; they stay "
                                         "loaded for the life of the process");
    } catch (...) {
    }
  }
}

// ---- SwapCore ----

SwapCore::SwapCore(Runtime &runtime, SwapOptions options) : impl_(std::make_unique<Impl>(runtime, std::move(options))) {
  impl_->domain->owner = this;
  if (impl_->options.watch) impl_->prepare_watcher();
  try {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->swap_locked({}, nullptr);
  } catch (...) {
    // No destructor runs for a constructor that throws: a first version stuck in a call (its
    // self-test hangs) must not be destroyed with impl_ under that call.
    for (auto &stuck : impl_->quarantine) swap_detail::keep_for_process(std::move(stuck));
    throw;
  }
  if (impl_->options.watch) impl_->start_watcher();
}

SwapCore::~SwapCore() {
  impl_->stop_watcher();
  std::lock_guard<std::mutex> lock(impl_->mutex);  // a swap in flight on another thread finishes first
  impl_->retire_all();
}

SwapReader SwapCore::register_reader() {
  swap_detail::ReaderSlot *slot = impl_->domain->claim();
  if (slot == nullptr) {
    throw UsageError("hot swap of " + who(impl_->options) + ": all " + std::to_string(impl_->options.max_readers) +
                     " reader slots are taken (SwapOptions::max_readers); destroy an unused SwapReader or raise it");
  }
  return SwapReader(impl_->domain, slot);
}

const ServedVersion &SwapCore::acquire(const SwapReader &reader) const noexcept {
  // Through the reader's Domain (shared with every reader), never this object: a reader cycling
  // while the Swappable is destroyed reads live memory and gets the retired state.
  const swap_detail::Domain &domain = *reader.domain_;
  assert(reader.slot_ != nullptr && reader.slot_->period.load(std::memory_order_relaxed) != 0 &&
         "SwapReader is offline (or moved from): call online() before acquire()");
  assert((domain.owner == this || domain.current.load(std::memory_order_relaxed) == &swap_detail::kRetiredVersion) &&
         "this SwapReader was registered with another Swappable");
  return *domain.current.load(std::memory_order_acquire);
}

SwapReport SwapCore::swap(const SwapRequest &request) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->swap_locked(request, nullptr);
}

SwapReport SwapCore::rollback() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->resident.size() < 2) {
    throw NotFoundError("hot swap of " + who(impl_->options) +
                        ": no previous version is resident to roll back to (SwapOptions::keep_resident is " +
                        std::to_string(impl_->options.keep_resident) + "; keep 2 or more to roll back)");
  }
  const std::string key = impl_->resident[1]->content_key;
  return impl_->swap_locked({}, &key);
}

std::vector<ServedVersion> SwapCore::resident() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<ServedVersion> versions;
  for (const auto &version : impl_->resident) versions.push_back(version->served);
  return versions;
}

std::size_t SwapCore::collect() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  SwapReport report;
  impl_->retire_locked(report);
  return report.retire_pending + report.quarantined;
}

}  // namespace kiln
