// The swap transaction: resolve or build -> load -> create -> activate -> interface ->
// self-test -> shadow -> state -> publish -> grace -> retire. Everything before publish happens
// beside the serving version; a failure there throws SwapError and changes nothing readers see.
#include "swap/core.hpp"

#include <algorithm>
#include <chrono>
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
std::string carry_state(const Version &from, Version &to, std::size_t *bytes) {
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
      run_step(report.steps, "selftest", [&] { return swap_detail::run_selftest(*candidate); });
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
      fresh = swap_detail::prepare_version(std::move(*module), options, next_serial++, report.steps);
      candidate = fresh.get();
    }
    if (serving != nullptr && request.shadow) {
      run_step(report.steps, "shadow", [&] {
        const auto difference = request.shadow(serving->served, candidate->served);
        if (difference) {
          throw AbiError("the shadow check found version " + candidate->content_key + " disagreeing with the serving " +
                         serving->content_key + ": " + *difference);
        }
        return std::string("agreed");
      });
    }
    if (serving != nullptr && options.carry_state) {
      run_step(report.steps, "state", [&] { return carry_state(*serving, *candidate, &report.state_bytes); });
    }
  } catch (const StepFailure &failure) {
    report.to_key = key;
    report.total_ms = ms_since(start);
    if (fresh && fresh->registers_cuda_runtime) {
      try {
        fresh->module.keep_mapped();
      } catch (const Error &) {
      }
    }
    std::string message = "hot swap of " + who(options) + (key.empty() ? std::string() : " to " + key) +
                          " refused at step " + failure.step + ": " + failure.message;
    message += serving != nullptr ? "; version " + serving->content_key + " still serves" : "; nothing is served";
    throw SwapError(failure.kind, message, failure.step, report);
  }

  // Publish: from the next acquire() on, readers get the candidate.
  const auto publish_start = Clock::now();
  domain->publish(&candidate->served);
  KILN_FAILURE_POINT("swap.publish");
  if (fresh) {
    resident.push_front(std::move(fresh));
  } else {
    auto found = std::find_if(resident.begin(), resident.end(), [&](const auto &v) { return v.get() == candidate; });
    std::unique_ptr<Version> moved = std::move(*found);
    resident.erase(found);
    resident.push_front(std::move(moved));
  }
  candidate->unused_after = 0;
  report.swapped = true;
  report.to_key = candidate->content_key;
  report.serial = candidate->served.serial;
  report.total_ms = ms_since(start);
  report.steps.push_back({"publish", ms_since(publish_start), "serial " + std::to_string(report.serial)});

  if (serving != nullptr) {
    const auto grace_start = Clock::now();
    serving->unused_after = domain->advance();
    const bool passed = domain->wait(serving->unused_after, options.grace_timeout);
    report.steps.push_back({"grace", ms_since(grace_start),
                            passed ? std::string("every reader passed a quiescent point")
                                   : "a reader did not pass a quiescent point within " +
                                         std::to_string(options.grace_timeout.count()) +
                                         " ms: retirement deferred (collect())"});
  }
  retire_locked(report);
  return report;
}

void SwapCore::Impl::retire_locked(SwapReport &report) {
  const auto start = Clock::now();
  while (resident.size() > options.keep_resident) {
    std::unique_ptr<Version> oldest = std::move(resident.back());
    resident.pop_back();
    const std::uint64_t period = oldest->unused_after;
    retiring.push_back({std::move(oldest), period});
  }
  const std::size_t before = report.retired.size();
  for (auto it = retiring.begin(); it != retiring.end();) {
    if (domain->passed(it->period)) {
      report.retired.push_back(swap_detail::retire(std::move(it->version), runtime_log()));
      it = retiring.erase(it);
    } else {
      ++it;
    }
  }
  report.retire_pending = retiring.size();
  if (report.retired.size() != before || report.retire_pending != 0) {
    std::ostringstream detail;
    detail << report.retired.size() - before << " retired";
    if (report.retire_pending != 0) detail << ", " << report.retire_pending << " waiting for a reader";
    report.steps.push_back({"retire", ms_since(start), detail.str()});
  }
}

LogCallback SwapCore::Impl::runtime_log() const {
  Runtime *rt = &runtime;
  return [rt](LogLevel level, const std::string &line) { rt->log(level, line); };
}

void SwapCore::Impl::retire_all() noexcept {
  // The owner destroys the Swappable after its readers stopped; a reader still online gets the
  // grace timeout to let go, then its versions go anyway (logged).
  domain->publish(nullptr);
  const std::uint64_t period = domain->advance();
  if (!domain->wait(period, options.grace_timeout)) {
    runtime.log(LogLevel::warning, "hot swap of " + who(options) +
                                    ": destroyed while a reader was still online; its versions are unloaded anyway");
  }
  SwapReport ignored;
  for (auto &version : resident) version->unused_after = period;
  for (auto &pending : retiring) pending.period = period;
  while (!resident.empty()) {
    retiring.push_back({std::move(resident.back()), period});
    resident.pop_back();
  }
  for (auto &pending : retiring) {
    try {
      swap_detail::retire(std::move(pending.version), runtime_log());
    } catch (...) {
    }
  }
  retiring.clear();
}

// ---- SwapCore ----

SwapCore::SwapCore(Runtime &runtime, SwapOptions options) : impl_(std::make_unique<Impl>(runtime, std::move(options))) {
  if (impl_->options.watch) impl_->prepare_watcher();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->swap_locked({}, nullptr);
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
  (void)reader;  // registration is what makes the read safe; the read itself is one load
  return *impl_->domain->current.load(std::memory_order_acquire);
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
  return report.retire_pending;
}

}  // namespace kiln
