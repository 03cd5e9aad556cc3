// A key planted on a remote by someone who can write there but cannot sign as the fleet (or
// damaged bytes) does not poison the fleet for good: the next upload by a machine signing with
// a trusted key replaces what every machine refuses, by a compare-and-swap, and what verifies
// is never overwritten. Against the storing fakes of support/fake_stores.hpp: a WebDAV server
// honouring If-Match, one ignoring it (as nginx's dav module does), and a Redis.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/remote/backend.hpp"
#include "store/remote/remote_config.hpp"
#include "support/checks.hpp"
#include "support/fake_stores.hpp"
#include "support/fixtures.hpp"

namespace remote = kiln::store::remote;

namespace {

// One of the storing fakes, whichever kind.
struct Server {
  std::string name;
  std::function<std::string()> url;
  std::function<std::optional<std::string>(const std::string &)> value;
  std::function<void(const std::string &, const std::string &)> set;
  std::function<void(std::function<void()>)> before_replace;
  bool compare_and_swap = true;  // its conditional writes are atomic (false: nginx's window)
  std::shared_ptr<void> keep;
};

template <class Store, class... Args>
Server server_of(const std::string &name, bool compare_and_swap, Args... args) {
  auto store = std::make_shared<Store>(args...);
  return {name,
          [store] { return store->url(); },
          [store](const std::string &key) { return store->value(key); },
          [store](const std::string &key, const std::string &value) { store->set(key, value); },
          [store](std::function<void()> hook) { store->before_replace(std::move(hook)); },
          compare_and_swap,
          store};
}

std::vector<Server> servers() {
  return {server_of<kiln::test::StoringWebDav>("WebDAV honouring If-Match", true, true),
          server_of<kiln::test::StoringWebDav>("WebDAV ignoring If-Match (nginx)", false, false),
          server_of<kiln::test::StoringRedis>("Redis", true)};
}

}  // namespace

TEST_CASE("remote squat: replace is a compare-and-swap on each backend") {
  for (const Server &server : servers()) {
    CAPTURE(server.name);
    const auto backend = remote::make_backend(remote::parse_remote(server.url(), "test"));
    CHECK_FALSE(backend->replace("cas/tests/k", "old", "new"));  // nothing there
    CHECK_FALSE(server.value("cas/tests/k"));
    REQUIRE(backend->put_new("cas/tests/k", "old"));
    CHECK_FALSE(backend->put_new("cas/tests/k", "other"));
    CHECK_FALSE(backend->replace("cas/tests/k", "not what it holds", "new"));
    CHECK(server.value("cas/tests/k") == "old");
    CHECK(backend->replace("cas/tests/k", "old", "new"));
    CHECK(server.value("cas/tests/k") == "new");
    CHECK_FALSE(backend->replace("cas/tests/k", "old", "newer"));
    CHECK(server.value("cas/tests/k") == "new");
  }
}
