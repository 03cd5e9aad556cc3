// One version of a swapped plugin: its Module, the active Instance and the ServedVersion readers
// see. Made by the transaction's steps (load -> create -> activate -> interface -> self-test),
// retired by deactivate -> destroy -> unload, with the unload checked in /proc/self/maps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>
#include <kiln/swap.hpp>

namespace kiln::swap_detail {

// "consumer/name", as swap messages name what is swapped.
inline std::string who(const SwapOptions &options) { return options.consumer + "/" + options.name; }

// A failed step of a swap: which, and the error it threw (kind kept for SwapError).
struct StepFailure {
  std::string step;
  ErrorKind kind = ErrorKind::other;
  std::string message;
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

  explicit Version(Module loaded) : module(std::move(loaded)) {}
};

// create -> activate(device, max_batch) -> the interface table -> self-test, each a step.
// Throws StepFailure; what was made is undone by the Version's destruction.
std::unique_ptr<Version> prepare_version(Module module, const SwapOptions &options, std::uint64_t serial,
                                         std::vector<SwapStep> &steps);

// Runs "kiln.selftest/1" when offered; the detail says what ran.
std::string run_selftest(const Version &version);

// deactivate -> destroy -> unload, then whether the file is gone from the address space, into
// `retired`. Throws (out of memory) only before it touches the version: then `version` is as it
// was and may be retired again. Once it returns, `version` is empty.
void retire(std::unique_ptr<Version> &version, RetiredVersion &retired, const LogCallback &log);

// Whether a file (device, inode) is mapped in this process (/proc/self/maps).
bool mapped_in_process(std::uint64_t device, std::uint64_t inode);

}  // namespace kiln::swap_detail
