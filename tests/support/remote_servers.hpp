// The real nginx (WebDAV) and redis-server the remote cache tests run against, started once for
// the ctest entry `remote` by tests/remote/servers (fixture remote_servers, tests/CMakeLists.txt),
// which names them in the file $KILN_TEST_SERVERS_ENV points at:
//
//   TEST_CASE("..." * kiln::test::skip_if(kiln::test::no_remote_servers)) {
//     const auto &servers = kiln::test::remote_servers();
//
// A case is skipped visibly (support/preconditions.hpp) when the servers are not there: the
// binary was run directly rather than through ctest, or nginx / redis-server is not installed.
#pragma once

#include <optional>
#include <string>

namespace kiln::test {

struct RemoteServers {
  std::string http_url;   // http://127.0.0.1:PORT/kiln
  std::string redis_url;  // redis://127.0.0.1:PORT/0
  std::string dir;        // where they keep their files (tests/remote/servers DIR)
};

// A namespace of each server no other caller sees (an HTTP prefix, a Redis key prefix), as
// KILN_REMOTE specs: a case's (or suite's) own remotes, never holding another's entries.
struct RemoteNamespaces {
  std::string http, redis;
};

// nullopt when the servers run, else why not.
std::optional<std::string> no_remote_servers();
// The servers; only in a case guarded by no_remote_servers (otherwise a failed REQUIRE).
const RemoteServers &remote_servers();
// Fresh namespaces of those servers (the same guard).
RemoteNamespaces fresh_remote_namespaces();

}  // namespace kiln::test
