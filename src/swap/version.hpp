// One version of a swapped plugin: its Module, the active Instance and the ServedVersion readers
// see. Made by the transaction's steps (load -> create -> activate -> interface -> self-test),
// retired by deactivate -> destroy -> unload, with the unload checked in /proc/self/maps.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>
#include <kiln/swap.hpp>

#include "swap/deadline.hpp"

namespace kiln::swap_detail {

// "consumer/name", as swap messages name what is swapped.
inline std::string who(const SwapOptions &options) { return options.consumer + "/" + options.name; }

// A failed step of a swap: which, and the error it threw (kind kept for SwapError).
struct StepFailure {
  std::string step;
  ErrorKind kind = ErrorKind::other;
  std::string message;
  std::chrono::milliseconds deadline{0};  // of a plugin call that did not return in time
};

// A plugin call past its deadline (with_deadline); run_step makes it a StepFailure with the
// deadline, SwapError::timed_out() for the caller.
struct DeadlineExpired : Error {
  DeadlineExpired(const std::string &message, std::chrono::milliseconds limit)
      : Error(ErrorKind::timeout, message), deadline(limit) {}
  std::chrono::milliseconds deadline;
};

// Runs one step, timing it into `steps`; an exception becomes a StepFailure naming the step.
// body returns the step's detail ("passed", "412 bytes carried").
void run_step(std::vector<SwapStep> &steps, const char *step, const std::function<std::string()> &body);

struct Version {
  Module module;
  std::optional<Instance> instance;
  ServedVersion served;
  std::string content_key;
  std::string file;             // the plugin file (its entry's artifact)
  std::uint64_t device = 0;     // its identity, to find its mappings in /proc/self/maps
  std::uint64_t inode = 0;
  bool registers_cuda_runtime = false;  // an .nv_fatbin section: kept mapped at retirement
  // The grace period readers must pass before it may be destroyed: set when it stops serving
  // (0 while it serves).
  std::uint64_t unused_after = 0;
  // A call into it that did not return within its deadline: while it runs the version is never
  // published, destroyed or unloaded (the swap quarantines it).
  std::shared_ptr<PluginCall> stuck;

  explicit Version(Module loaded) : module(std::move(loaded)) {}
  bool busy() const { return stuck && stuck->running(); }
};

// Runs `body` (a call into the plugin code of `inside`) under `limit`, the deadline
// SwapDeadlines::<option>. On expiry every version in `inside` is marked stuck with the call and
// a DeadlineExpired names the step, the first version's plugin, the deadline and the option. A
// version already stuck in an earlier call is refused the same way without calling it. `body`
// must capture what it uses by value (or point to the versions): it may outlive the swap.
std::string with_deadline(const char *step, const char *option, std::chrono::milliseconds limit,
                          const std::vector<Version *> &inside, std::function<std::string()> body);

// A Version of a loaded module, not yet created (device and inode of its file noted).
std::unique_ptr<Version> make_version(Module module);

// create -> activate(device, max_batch) -> the interface table -> self-test, each a step under
// its deadline. Throws StepFailure; the caller owns `version` and quarantines it when busy().
void prepare_version(Version &version, const SwapOptions &options, std::uint64_t serial, std::vector<SwapStep> &steps);

// Runs "kiln.selftest/1" when offered, under SwapDeadlines::selftest; the detail says what ran.
std::string run_selftest(Version &version, const SwapOptions &options);

// deactivate -> destroy (under `limit`) -> unload, then whether the file is gone from the
// address space, into `retired`. Throws (out of memory) only before it touches the version:
// then `version` is as it was and may be retired again. Returns true once `version` is empty;
// false when deactivate/destroy did not return within `limit`: `version` is then busy() (its
// instance still in the plugin) and the caller quarantines it.
bool retire(std::unique_ptr<Version> &version, RetiredVersion &retired, const LogCallback &log,
            std::chrono::milliseconds limit);

// Keeps a version a call never returned from for the life of the process: never destroyed or
// unloaded, and still reachable (leak checkers see a deliberate keep, not a lost pointer).
void keep_for_process(std::unique_ptr<Version> version) noexcept;

// Whether a file (device, inode) is mapped in this process (/proc/self/maps).
bool mapped_in_process(std::uint64_t device, std::uint64_t inode);

}  // namespace kiln::swap_detail
