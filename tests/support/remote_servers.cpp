#include "support/remote_servers.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include <unistd.h>

#include <doctest/doctest.h>

namespace kiln::test {
namespace {

struct RemoteServersState {
  std::optional<std::string> missing;
  RemoteServers servers;
};

const RemoteServersState &remote_servers_state() {
  static const RemoteServersState state = [] {
    RemoteServersState out;
    const char *file = std::getenv("KILN_TEST_SERVERS_ENV");
    if (file == nullptr || *file == '\0') {
      out.missing =
          "KILN_TEST_SERVERS_ENV is not set: run these through ctest (ctest -R remote), which starts "
          "nginx and redis-server for them (tests/remote/servers start DIR, then "
          "KILN_TEST_SERVERS_ENV=DIR/servers.env)";
      return out;
    }
    std::ifstream in(file);
    if (!in) {
      out.missing = std::string("cannot read KILN_TEST_SERVERS_ENV=") + file +
                    " (did the remote_servers_start test run? ctest -R remote runs it first)";
      return out;
    }
    std::map<std::string, std::string> values;
    for (std::string line; std::getline(in, line);) {
      const auto equals = line.find('=');
      if (equals != std::string::npos) values[line.substr(0, equals)] = line.substr(equals + 1);
    }
    if (values.count("KILN_TEST_SERVERS_SKIP") != 0) {
      out.missing = "no test servers: " + values["KILN_TEST_SERVERS_SKIP"];
      return out;
    }
    out.servers = {values["KILN_TEST_HTTP_URL"], values["KILN_TEST_REDIS_URL"], values["KILN_TEST_SERVERS_DIR"]};
    if (out.servers.http_url.empty() || out.servers.redis_url.empty() || out.servers.dir.empty()) {
      out.missing = std::string(file) +
                    " lacks KILN_TEST_HTTP_URL, KILN_TEST_REDIS_URL or KILN_TEST_SERVERS_DIR "
                    "(written by tests/remote/servers start)";
    }
    return out;
  }();
  return state;
}

}  // namespace

std::optional<std::string> no_remote_servers() { return remote_servers_state().missing; }

const RemoteServers &remote_servers() {
  const auto &state = remote_servers_state();
  REQUIRE_MESSAGE(!state.missing, state.missing.value_or(""));
  return state.servers;
}

RemoteNamespaces fresh_remote_namespaces() {
  const RemoteServers &servers = remote_servers();
  std::random_device random;
  const std::string tag = "t" + std::to_string(random()) + std::to_string(::getpid());
  return {servers.http_url + "/" + tag, servers.redis_url + ";prefix=" + tag + ":"};
}

}  // namespace kiln::test
