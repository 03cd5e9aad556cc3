// The remote cache backends (src/remote/backend.hpp) against real servers: an nginx with
// WebDAV and a redis-server that ctest starts for the entry `remote` (tests/remote/servers), and,
// for the failure modes, sockets opened here (a closed port, one that never answers, one that
// answers garbage). The servers are shared by every case: keys carry this run's random id.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <kiln/errors.hpp>

#include "remote/backend.hpp"
#include "support/checks.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"
#include "support/remote_servers.hpp"

namespace remote = kiln::remote;
using kiln::test::contains;
using kiln::test::no_remote_servers;
using kiln::test::remote_servers;
using kiln::test::skip_if;

namespace {

// Unique per run: the servers outlive a case, and a rerun must not find the last run's keys.
std::string remote_test_key(const std::string &kind, const std::string &what) {
  static const std::string run = [] {
    std::random_device random;
    return std::to_string(random()) + std::to_string(random());
  }();
  static int counter = 0;
  return kind + "/test-" + run + "/" + what + "-" + std::to_string(++counter);
}

remote::Endpoint remote_test_endpoint(const std::string &url) {
  remote::Endpoint endpoint;
  endpoint.url = url;
  endpoint.connect_timeout_s = 2;
  endpoint.timeout_s = 10;
  return endpoint;
}

// Both servers, as backends a test makes from the endpoint `adjust` shapes.
template <class Adjust>
std::vector<std::unique_ptr<remote::Backend>> remote_test_backends(Adjust adjust) {
  std::vector<std::unique_ptr<remote::Backend>> out;
  for (const auto &url : {remote_servers().http_url, remote_servers().redis_url}) {
    auto endpoint = remote_test_endpoint(url);
    adjust(endpoint);
    out.push_back(remote::make_backend(endpoint));
  }
  return out;
}
std::vector<std::unique_ptr<remote::Backend>> remote_test_backends() {
  return remote_test_backends([](remote::Endpoint &) {});
}

// What fn throws as a RemoteError, "" when it does not throw.
template <class Fn>
std::string remote_error_of(Fn fn) {
  try {
    fn();
  } catch (const remote::RemoteError &error) {
    return error.what();
  }
  return "";
}

template <class Fn>
double remote_seconds_of(Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A 3 MB value of every byte value, NULs included.
std::string remote_test_binary() {
  std::string value(3u << 20, '\0');
  std::mt19937 random(13);
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i % 7 == 0 ? 0 : random() & 0xff);
  return value;
}

// A listening socket on 127.0.0.1 (port from the kernel) that nobody accepts on: the kernel
// completes connections into its backlog, and then nothing ever answers.
class RemoteTestListener {
 public:
  RemoteTestListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    socklen_t size = sizeof address;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr *>(&address), &size) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~RemoteTestListener() { close(); }
  RemoteTestListener(const RemoteTestListener &) = delete;
  RemoteTestListener &operator=(const RemoteTestListener &) = delete;
  int fd() const { return fd_; }
  int port() const { return port_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A server that reads what a client sends first, answers "HELLO\r\n" and hangs up.
class RemoteTestGarbageServer {
 public:
  RemoteTestGarbageServer() : thread_([this] { serve(); }) {}
  ~RemoteTestGarbageServer() {
    stop_ = true;
    thread_.join();
  }
  RemoteTestGarbageServer(const RemoteTestGarbageServer &) = delete;
  RemoteTestGarbageServer &operator=(const RemoteTestGarbageServer &) = delete;
  int port() const { return listener_.port(); }

 private:
  void serve() {
    while (!stop_) {
      pollfd ready{listener_.fd(), POLLIN, 0};
      if (::poll(&ready, 1, 50) != 1) continue;
      const int client = ::accept(listener_.fd(), nullptr, nullptr);
      if (client < 0) continue;
      pollfd request{client, POLLIN, 0};
      char buffer[4096];
      if (::poll(&request, 1, 500) == 1) {
        [[maybe_unused]] const auto ignored = ::recv(client, buffer, sizeof buffer, 0);
      }
      const char garbage[] = "HELLO\r\n";
      [[maybe_unused]] const auto sent = ::send(client, garbage, sizeof garbage - 1, MSG_NOSIGNAL);
      ::shutdown(client, SHUT_WR);
      ::poll(&request, 1, 200);  // let the client read it before the close
      ::close(client);
    }
  }

  RemoteTestListener listener_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A port nothing listens on (bound, then closed).
int remote_test_closed_port() {
  RemoteTestListener listener;
  const int port = listener.port();
  listener.close();
  return port;
}

std::vector<std::string> remote_test_urls(int port) {
  return {"http://127.0.0.1:" + std::to_string(port) + "/kiln", "redis://127.0.0.1:" + std::to_string(port) + "/0"};
}

}  // namespace

TEST_SUITE("remote") {
  TEST_CASE("remote: get of a missing key is nullopt; put_new then get gives the same bytes" *
            skip_if(no_remote_servers)) {
    const std::string binary = remote_test_binary();
    for (const auto &backend : remote_test_backends()) {
      CAPTURE(backend->display_url());
      const std::string key = remote_test_key("cas", "value");
      CHECK_FALSE(backend->get(key).has_value());
      CHECK(backend->put_new(key, "first"));
      CHECK(backend->get(key) == std::optional<std::string>("first"));

      const std::string big = remote_test_key("cas", "binary");
      CHECK(backend->put_new(big, binary));
      const auto back = backend->get(big);
      REQUIRE(back.has_value());
      CHECK(back->size() == binary.size());
      CHECK(*back == binary);

      const std::string empty = remote_test_key("ac", "empty");
      CHECK(backend->put_new(empty, ""));
      CHECK(backend->get(empty) == std::optional<std::string>(""));
    }
  }

  TEST_CASE("remote: put_new of a key that holds a value is false and leaves it" * skip_if(no_remote_servers)) {
    for (const auto &backend : remote_test_backends()) {
      CAPTURE(backend->display_url());
      const std::string key = remote_test_key("cas", "existing");
      CHECK(backend->put_new(key, "original"));
      CHECK_FALSE(backend->put_new(key, "another"));
      CHECK(backend->get(key) == std::optional<std::string>("original"));
    }
  }

  TEST_CASE("remote: a value over max_bytes is refused on put and on get" * skip_if(no_remote_servers)) {
    const std::string binary = remote_test_binary();
    auto small = remote_test_backends([](remote::Endpoint &endpoint) { endpoint.max_bytes = 1 << 20; });
    auto large = remote_test_backends();
    for (std::size_t i = 0; i < small.size(); ++i) {
      CAPTURE(small[i]->display_url());
      const std::string key = remote_test_key("cas", "too-large");
      const std::string refused = remote_error_of([&] { small[i]->put_new(key, binary); });
      CHECK(contains(refused, "max_bytes"));
      CHECK(contains(refused, key));
      CHECK(contains(refused, small[i]->display_url()));
      CHECK_FALSE(large[i]->get(key).has_value());  // not sent

      CHECK(large[i]->put_new(key, binary));
      const std::string unread = remote_error_of([&] { small[i]->get(key); });
      CHECK(contains(unread, "max_bytes"));
      CHECK(contains(unread, key));
      // The backend still works afterwards (Redis: a fresh connection; the old one had a reply pending).
      const std::string fits = remote_test_key("cas", "fits");
      CHECK(small[i]->put_new(fits, "small"));
      CHECK(small[i]->get(fits) == std::optional<std::string>("small"));
    }
  }

  TEST_CASE("remote: a bad key is a UsageError naming it, before any request") {
    // Closed ports: a key that passed validation would fail with a RemoteError instead.
    for (const auto &url : remote_test_urls(remote_test_closed_port())) {
      CAPTURE(url);
      auto backend = remote::make_backend(remote_test_endpoint(url));
      for (const std::string &bad :
           std::vector<std::string>{"", "/cas/a", "cas/a/", "cas//a", "cas/./a", "cas/../a", "..", "cas/a b",
                                    "cas/a\nb", "cas/\xc3\xa9", "cas/a?b", "cas/a%2f", std::string(401, 'a')}) {
        CAPTURE(bad);
        kiln::ErrorKind kind = kiln::ErrorKind::other;
        const std::string message = kiln::test::error_of([&] { backend->get(bad); }, &kind);
        CHECK(kind == kiln::ErrorKind::usage);
        CHECK(contains(message, "remote cache key"));
        CHECK_THROWS_AS(backend->put_new(bad, "x"), kiln::UsageError);
        CHECK_THROWS_AS(backend->acquire_lease(bad, "A", 1), kiln::UsageError);
        CHECK_THROWS_AS(backend->current_lease(bad), kiln::UsageError);
        CHECK_THROWS_AS(backend->break_lease(bad), kiln::UsageError);
      }
      for (const std::string &good :
           std::vector<std::string>{"cas/hjcd-ik/0123abcd", "a", "ac/x.y_z-1/..a", std::string(400, 'a')}) {
        CAPTURE(good);
        CHECK_THROWS_AS(backend->get(good), remote::RemoteError);
      }
    }
  }

  TEST_CASE("remote: make_backend takes http, https and redis URLs and keeps credentials out of messages") {
    const int port = remote_test_closed_port();
    const std::string at = "127.0.0.1:" + std::to_string(port);
    auto http = remote::make_backend(remote_test_endpoint("http://kiln:s3cret@" + at + "/cache/"));
    CHECK(http->display_url() == "http://" + at + "/cache");
    const std::string http_error = remote_error_of([&] { http->get("cas/c/k"); });
    CHECK(contains(http_error, "http://" + at + "/cache: GET cas/c/k: "));
    CHECK_FALSE(contains(http_error, "s3cret"));
    CHECK(remote::make_backend(remote_test_endpoint("https://" + at))->display_url() == "https://" + at);

    auto redis = remote::make_backend(remote_test_endpoint("redis://:s3cret@" + at + "/3"));
    CHECK(redis->display_url() == "redis://" + at + "/3");
    const std::string redis_error = remote_error_of([&] { redis->get("cas/c/k"); });
    CHECK(contains(redis_error, "redis://" + at + "/3"));
    CHECK_FALSE(contains(redis_error, "s3cret"));
    CHECK(remote::make_backend(remote_test_endpoint("redis://cache.local"))->display_url() ==
          "redis://cache.local:6379/0");

    for (const std::string &bad : std::vector<std::string>{
             "ftp://:s3cret@host/x", "host:8080/kiln", "file:///tmp/cache", "redis://", "redis://host:0",
             "redis://host:99999", "redis://host/db", "redis://s3cret@host", "http://", "http://host/kiln?x=1"}) {
      CAPTURE(bad);
      kiln::ErrorKind kind = kiln::ErrorKind::other;
      const std::string message = kiln::test::error_of([&] { remote::make_backend(remote_test_endpoint(bad)); }, &kind);
      CHECK(kind == kiln::ErrorKind::usage);
      CHECK(contains(message, "remote cache URL"));
      CHECK(contains(message, "use "));
      CHECK_FALSE(contains(message, "s3cret"));
    }
  }

  TEST_CASE("remote: ping answers" * skip_if(no_remote_servers)) {
    auto backends = remote_test_backends();
    CHECK(backends[0]->ping().rfind("HTTP ", 0) == 0);
    CHECK(backends[1]->ping() == "PONG");
  }

  TEST_CASE("remote: credentials in an http URL are sent, and shown nowhere" * skip_if(no_remote_servers)) {
    // The test nginx asks for none: it ignores the Authorization header curl sends.
    const std::string url = remote_servers().http_url;
    auto backend = remote::make_backend(remote_test_endpoint(url.substr(0, 7) + "kiln:s3cret@" + url.substr(7)));
    CHECK(backend->display_url() == url);
    const std::string key = remote_test_key("cas", "credentials");
    CHECK(backend->put_new(key, "v"));
    CHECK(backend->get(key) == std::optional<std::string>("v"));
  }

  TEST_CASE("remote: a Redis URL's database and password are used" * skip_if(no_remote_servers)) {
    const std::string url = remote_servers().redis_url;  // redis://127.0.0.1:PORT/0
    const std::string base = url.substr(0, url.rfind('/'));
    auto db0 = remote::make_backend(remote_test_endpoint(base + "/0"));
    auto db1 = remote::make_backend(remote_test_endpoint(base + "/1"));
    const std::string key = remote_test_key("cas", "database");
    CHECK(db1->put_new(key, "in db 1"));
    CHECK(db1->get(key) == std::optional<std::string>("in db 1"));
    CHECK_FALSE(db0->get(key).has_value());
    // The test server has no password: AUTH fails, and the message says what to check.
    auto wrong = remote::make_backend(remote_test_endpoint("redis://:wrong@" + base.substr(8) + "/0"));
    const std::string message = remote_error_of([&] { wrong->ping(); });
    CHECK(contains(message, "AUTH"));
    CHECK(contains(message, "password"));
    CHECK_FALSE(contains(message, ":wrong"));
  }

  TEST_CASE("remote: a lease has one holder; current names it; renew, release, then another takes it" *
            skip_if(no_remote_servers)) {
    auto machines_a = remote_test_backends();
    auto machines_b = remote_test_backends();
    for (std::size_t i = 0; i < machines_a.size(); ++i) {
      auto &a = *machines_a[i];
      auto &b = *machines_b[i];
      CAPTURE(a.display_url());
      const bool http = a.display_url().rfind("http", 0) == 0;
      const std::string key = remote_test_key("lease", "build");
      CHECK_FALSE(a.current_lease(key).has_value());
      CHECK(a.acquire_lease(key, "host-a:1:aaaa", 30));
      CHECK_FALSE(b.acquire_lease(key, "host-b:2:bbbb", 30));
      CHECK_FALSE(a.acquire_lease(key, "host-a:1:aaaa", 30));  // taken: by whom is current's business
      CHECK(b.current_lease(key) == std::optional<std::string>(http ? "host-a:1:aaaa 0" : "host-a:1:aaaa"));

      a.renew_lease(key, "host-a:1:aaaa", 30);
      CHECK(b.current_lease(key) == std::optional<std::string>(http ? "host-a:1:aaaa 1" : "host-a:1:aaaa"));
      // Renewing or releasing someone else's lease changes nothing.
      b.renew_lease(key, "host-b:2:bbbb", 30);
      b.release_lease(key, "host-b:2:bbbb");
      CHECK(b.current_lease(key) == std::optional<std::string>(http ? "host-a:1:aaaa 1" : "host-a:1:aaaa"));

      a.release_lease(key, "host-a:1:aaaa");
      CHECK_FALSE(b.current_lease(key).has_value());
      CHECK(b.acquire_lease(key, "host-b:2:bbbb", 30));
      CHECK_FALSE(a.acquire_lease(key, "host-a:1:aaaa", 30));
      CHECK(a.current_lease(key) == std::optional<std::string>(http ? "host-b:2:bbbb 0" : "host-b:2:bbbb"));
      b.release_lease(key, "host-b:2:bbbb");
      CHECK_FALSE(a.current_lease(key).has_value());
      a.release_lease(key, "host-a:1:aaaa");  // nothing to release: fine
    }
  }

  TEST_CASE("remote: break_lease removes a lease whoever holds it" * skip_if(no_remote_servers)) {
    auto machines_a = remote_test_backends();
    auto machines_b = remote_test_backends();
    for (std::size_t i = 0; i < machines_a.size(); ++i) {
      CAPTURE(machines_a[i]->display_url());
      const std::string key = remote_test_key("lease", "stuck");
      CHECK(machines_a[i]->acquire_lease(key, "dead-holder", 30));
      machines_b[i]->break_lease(key);
      CHECK_FALSE(machines_b[i]->current_lease(key).has_value());
      CHECK(machines_b[i]->acquire_lease(key, "live-holder", 30));
      machines_b[i]->break_lease(key);
      machines_b[i]->break_lease(key);  // none: fine
      CHECK_FALSE(machines_a[i]->current_lease(key).has_value());
    }
  }

  TEST_CASE("remote: a Redis lease expires after its ttl unless renewed" * skip_if(no_remote_servers)) {
    auto a = remote::make_backend(remote_test_endpoint(remote_servers().redis_url));
    auto b = remote::make_backend(remote_test_endpoint(remote_servers().redis_url));
    const std::string key = remote_test_key("lease", "expiring");
    CHECK(a->acquire_lease(key, "A", 0.3));
    CHECK_FALSE(b->acquire_lease(key, "B", 0.3));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK_FALSE(b->current_lease(key).has_value());
    CHECK(b->acquire_lease(key, "B", 0.3));

    const std::string renewed = remote_test_key("lease", "renewed");
    CHECK(a->acquire_lease(renewed, "A", 0.3));
    a->renew_lease(renewed, "A", 30);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK_FALSE(b->acquire_lease(renewed, "B", 0.3));
    CHECK(b->current_lease(renewed) == std::optional<std::string>("A"));
    a->release_lease(renewed, "A");
    CHECK_THROWS_AS(a->acquire_lease(renewed, "A", 0), kiln::UsageError);
  }

  TEST_CASE("remote: a refused connection is a RemoteError at once") {
    for (const auto &url : remote_test_urls(remote_test_closed_port())) {
      CAPTURE(url);
      auto backend = remote::make_backend(remote_test_endpoint(url));  // 2 s connect timeout
      std::string message;
      const double seconds = remote_seconds_of([&] { message = remote_error_of([&] { backend->get("cas/c/k"); }); });
      CAPTURE(message);
      CHECK(seconds < 1.0);
      CHECK(contains(message, backend->display_url()));
      CHECK(contains(message, "refused"));
      CHECK_THROWS_AS(backend->put_new("cas/c/k", "v"), remote::RemoteError);
      CHECK_THROWS_AS(backend->ping(), remote::RemoteError);
    }
  }

  TEST_CASE("remote: a server that accepts and never answers is a RemoteError after about the timeout") {
    RemoteTestListener black_hole;
    for (const auto &url : remote_test_urls(black_hole.port())) {
      CAPTURE(url);
      auto endpoint = remote_test_endpoint(url);
      endpoint.connect_timeout_s = 0.5;
      endpoint.timeout_s = 0.5;
      auto backend = remote::make_backend(endpoint);
      std::string message;
      const double seconds = remote_seconds_of([&] { message = remote_error_of([&] { backend->get("cas/c/k"); }); });
      CAPTURE(message);
      CHECK(seconds >= 0.5 * 0.8);
      CHECK(seconds < 0.5 + 2);
      CHECK(contains(message, backend->display_url()));
      CHECK(contains(message, "timeout"));
    }
  }

  TEST_CASE("remote: a server answering garbage is a RemoteError") {
    RemoteTestGarbageServer garbage;
    for (const auto &url : remote_test_urls(garbage.port())) {
      CAPTURE(url);
      auto backend = remote::make_backend(remote_test_endpoint(url));
      const std::string message = remote_error_of([&] { backend->get("cas/c/k"); });
      CAPTURE(message);
      CHECK(contains(message, backend->display_url()));
      CHECK_THROWS_AS(backend->put_new("cas/c/k", "v"), remote::RemoteError);
      CHECK_THROWS_AS(backend->acquire_lease("lease/c/k", "A", 1), remote::RemoteError);
      CHECK_THROWS_AS(backend->ping(), remote::RemoteError);
    }
  }

  TEST_CASE("remote: a Redis restart between two calls: the second reconnects" * skip_if(no_remote_servers)) {
    auto backend = remote::make_backend(remote_test_endpoint(remote_servers().redis_url));
    const std::string key = remote_test_key("cas", "restart");
    CHECK(backend->put_new(key, "before"));
    const auto restart =
        kiln::test::run_shell(std::string(KILN_TEST_SOURCE_DIR) + "/tests/remote/servers restart-redis " +
                              kiln::test::shell_quote(remote_servers().dir));
    CAPTURE(restart.out);
    CAPTURE(restart.err);
    REQUIRE(restart.exit_code == 0);
    // The server keeps nothing across a restart (--save ''): the key is gone, and no error.
    CHECK_FALSE(backend->get(key).has_value());
    CHECK(backend->put_new(key, "after"));
    CHECK(backend->get(key) == std::optional<std::string>("after"));
  }
}  // TEST_SUITE
