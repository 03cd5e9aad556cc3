// The hot-swap tests' fixture: a store holding the swap probe plugins (tests/plugins/swap_probe.cpp)
// under consumer "swap", and a Swappable over "kiln.test.swap/1".
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <kiln/runtime.hpp>
#include <kiln/swap.hpp>

#include "plugins/swap_probe.h"
#include "support/fixtures.hpp"

namespace kiln::test {

using SwapProbe = Swappable<kiln_test_swap_v1>;

// Publishes `file` as swap/name through `runtime`; its content key.
inline std::string publish_probe(Runtime &runtime, const std::string &name, const std::string &file) {
  PublishRequest request;
  request.consumer = "swap";
  request.name = name;
  request.artifact_file = file;
  return runtime.publish(request).content_key;
}

struct SwapStore {
  TempDir dir;
  Runtime runtime;

  SwapStore() : runtime(options(dir)) {}

  static RuntimeOptions options(const TempDir &dir) {
    RuntimeOptions options;
    options.cache_dir = (dir / "cache").string();
    options.declared_device = "sm_90";
    return options;
  }

  // Publishes `file` as swap/name; its content key.
  std::string publish(const std::string &name, const std::string &file) { return publish_probe(runtime, name, file); }

  SwapOptions swap_options(const std::string &name = "probe") const {
    SwapOptions options;
    options.consumer = "swap";
    options.name = name;
    options.interface_id = KILN_TEST_SWAP_INTERFACE_ID;
    options.device = -1;
    options.max_batch = 1;
    return options;
  }
};

// One control-thread cycle of a thread that then waits (online, acquire, call, offline): a swap
// run next on the same thread does not wait for its reader, as urcu-qsbr's synchronize_rcu puts
// a registered caller offline. The answer's version must be the served one's.
inline std::uint64_t cycle(const SwapProbe &probe, SwapReader &reader, std::uint64_t x) {
  reader.online();
  const auto served = probe.acquire(reader);
  const std::uint64_t answer = served->call(served.instance, x);
  reader.offline();
  return answer;
}

inline std::uint64_t version_of(std::uint64_t answer) { return answer % 1000; }

// A swap to another artifact of the fixture's consumer.
inline SwapRequest swap_to(const std::string &name) {
  SwapRequest request;
  request.name = name;
  return request;
}

// Counts of this process's resources: open descriptors, mappings, resident set (kB).
struct ProcessResources {
  std::size_t fds = 0;
  std::size_t mappings = 0;  // under ASan or TSan, of files only (not the allocator's regions)
  std::size_t rss_kb = 0;
  // The heap in use, in kB. Under ASan or TSan the sanitizer allocator's live bytes: its
  // quarantine keeps freed blocks resident (up to 256 MB) and its shadow grows with each load,
  // so there the resident set says more about what ran before than about this code. Elsewhere
  // the resident set.
  std::size_t heap_kb = 0;
  std::string heap_measure = "resident set";
  static ProcessResources now();
};

}  // namespace kiln::test
