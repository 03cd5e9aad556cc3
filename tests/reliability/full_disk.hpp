// Writers on a full disk (test_full_disk.cpp): a kiln command run with its store on a small tmpfs
// of its own, filled so that only so many bytes remain, at fill levels found by measuring what
// the command writes. After each run the store must be whole, hold nothing a failed writer left,
// and the next run (the filler gone) must succeed.
//
// The test process has threads, so it cannot enter a namespace itself: each run is a child
// `unshare -r -m` (a user and a mount namespace) that mounts the tmpfs over the workspace's store,
// copies the store's prepared state in, fills it, runs the command, removes the filler and copies
// the store back out (the tmpfs goes with the namespace); the checks then run on that copy, at
// the same path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reliability/child.hpp"
#include "reliability/crash_scenarios.hpp"
#include "reliability/workspace.hpp"

namespace kiln::reliability {

// nullopt where a tmpfs can be mounted in a private namespace (unshare -r -m), else why not.
std::optional<std::string> no_small_disk();

// What a run on the small disk saw.
struct DiskRun {
  Outcome op;                      // the kiln command
  std::uint64_t used_before = 0;   // bytes the store used on the tmpfs before the command
  std::uint64_t used_after = 0;    // ... and after it, the filler gone
};

// Runs `op` with ws.store() on a tmpfs of `size_bytes` holding the store's current contents and a
// filler that leaves `free_bytes` free (no filler when negative); the store is what the tmpfs
// held afterwards, the filler removed.
DiskRun run_on_small_disk(const Workspace &ws, const Op &op, std::uint64_t size_bytes, long long free_bytes);

// One fill level: how many bytes are left free, and why that many.
struct FillLevel {
  std::string label;
  long long free_bytes = 0;
};

// What a successful run wrote, in tmpfs pages, by where it went.
struct Needs {
  std::uint64_t total = 0;     // all of it (df before and after)
  std::uint64_t abi = 0;       // <store>/abi: the ABI headers' copy
  std::uint64_t objects = 0;   // <consumer>/objects: the object cache
  std::uint64_t entries = 0;   // <consumer>/store/<key>: the entries' files
  std::uint64_t largest = 0;   // the largest file written (the artifact)
};
Needs measure(const Scenario &scenario, const fs::path &dir);
std::vector<FillLevel> fill_levels(const Needs &needs);

// Runs `scenario` at each fill level (each on a fresh workspace under `dir`), checks each run
// and the next, and prints the figures.
void fill_at_levels(const Scenario &scenario, const fs::path &dir);

}  // namespace kiln::reliability
