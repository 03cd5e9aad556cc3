// The mutation suite through the remote caches: the same mutations (mutation_cases.hpp), every
// step on a machine of its own -- an empty cache -- against the nginx (WebDAV) and the Redis the
// ctest fixture remote_servers starts, in namespaces of the case's own. After each mutation no
// remote may serve an entry uploaded for other inputs; what must not matter, each remote must
// serve, signed by the fleet's key (mutation_bench.hpp). Each case prints a tally per remote.
// Skipped visibly without the servers or the backend's toolchain.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "reliability/mutation_cases.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/remote_servers.hpp"

namespace {

std::optional<std::string> no_servers_or_nvcc() {
  if (auto missing = kiln::test::no_remote_servers()) return missing;
  return kiln::test::no_toolchain();
}

std::optional<std::string> no_servers_or_cmake() {
  if (auto missing = kiln::test::no_remote_servers()) return missing;
  return kiln::test::no_cmake_toolchain();
}

std::optional<std::string> no_servers_or_nvrtc() {
  if (auto missing = kiln::test::no_remote_servers()) return missing;
  return kiln::test::no_nvrtc();
}

std::vector<kiln::reliability::mutation::Remote> fleet_remotes() {
  const kiln::test::RemoteNamespaces fresh = kiln::test::fresh_remote_namespaces();
  return {{"http", fresh.http}, {"redis", fresh.redis}};
}

}  // namespace

TEST_SUITE("mutation_remote") {
  TEST_CASE("mutation remote: nvcc backend: no remote serves a keyed input's mutation, each serves the rest" *
            kiln::test::skip_if(no_servers_or_nvcc)) {
    kiln::reliability::mutation::nvcc_mutations(fleet_remotes());
  }

  TEST_CASE("mutation remote: cmake backend: no remote serves a keyed input's mutation, each serves the rest" *
            kiln::test::skip_if(no_servers_or_cmake)) {
    kiln::reliability::mutation::cmake_mutations(fleet_remotes());
  }

  TEST_CASE("mutation remote: nvrtc backend: no remote serves a keyed input's mutation, each serves the rest" *
            kiln::test::skip_if(no_servers_or_nvrtc)) {
    kiln::reliability::mutation::nvrtc_mutations(fleet_remotes());
  }
}
