// Remote servers that answer in wrong-but-legal ways (support/fake_remotes.hpp, in-process on
// 127.0.0.1): a Redis and a WebDAV server contradicting themselves about a build lease, and a
// Redis whose replies are of the wrong type, too many, or too large. kiln must end every wait
// by lease_wait or a cancel, and refuse a reply before it costs memory.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <kiln/cancel.hpp>
#include <kiln/errors.hpp>

#include "remote/backend.hpp"
#include "remote/cache.hpp"
#include "store/storage.hpp"
#include "support/build_recipe.hpp"
#include "support/checks.hpp"
#include "support/fake_remotes.hpp"
#include "support/fixtures.hpp"

using kiln::test::contains;
using kiln::test::FakeHttp;
using kiln::test::FakeRedis;
using kiln::test::TempDir;
namespace remote = kiln::remote;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kInputKey(32, 'a');

// A Redis that refuses every SET NX ("someone holds the lease") while every GET finds nothing
// ("nobody holds it"; no entry either).
FakeRedis contradicting_redis() {
  return FakeRedis([](const std::vector<std::string> &) -> std::string { return "$-1\r\n"; });
}

// A WebDAV server doing the same: every MKCOL "exists", no holder file, and the lease
// collection there for every other HEAD (taken when kiln asks to take it, gone when it looks).
FakeHttp contradicting_http() {
  auto heads = std::make_shared<std::atomic<int>>(0);
  return FakeHttp([heads](const std::string &method, const std::string &) -> FakeHttp::Reply {
    if (method == "MKCOL") return {405, ""};
    if (method == "HEAD") return {++*heads % 2 == 1 ? 403 : 404, ""};
    return {404, ""};
  });
}

struct LeaseWait {
  double seconds = 0;
  bool lease = false;
  std::vector<std::string> logged;
};

LeaseWait wait_for_lease(const std::string &url, double lease_wait_s, const kiln::CancelToken *cancel) {
  TempDir dir;
  const kiln::store::Storage storage({kiln::store::StoreLocation{dir.path(), true, "test"}});
  // Leases are taken where a machine writes, and could take another machine's upload.
  remote::RemoteConfig config;
  config.remotes.push_back(remote::parse_remote(url + ";timeout=2;read-write", "test"));
  config.accept_unsigned = true;
  config.lease_wait_s = lease_wait_s;
  LeaseWait out;
  const remote::RemoteCache cache(config, [&out](kiln::LogLevel, const std::string &line) { out.logged.push_back(line); });
  std::optional<remote::RemoteCache::Found> fetched;
  const auto start = Clock::now();
  out.lease = cache.claim(storage, "tests", kInputKey, cancel, &fetched) != nullptr;
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

std::string redis_error(FakeRedis &redis, const std::function<void(remote::Backend &)> &call,
                        const std::string &attributes = "") {
  auto backend = remote::make_backend(remote::parse_remote(redis.url() + ";timeout=3" + attributes, "test"));
  try {
    call(*backend);
  } catch (const remote::RemoteError &error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("remote hostile: a server refusing the lease while showing no holder costs lease_wait, not forever") {
  FakeRedis redis = contradicting_redis();
  FakeHttp http = contradicting_http();
  for (const std::string &url : {redis.url(), http.url()}) {
    CAPTURE(url);
    const LeaseWait waited = wait_for_lease(url, 0.5, nullptr);
    CHECK_FALSE(waited.lease);
    CHECK(waited.seconds >= 0.4);
    CHECK(waited.seconds < 3);  // the fake gives up after 8 s: a loop ignoring lease_wait ends only then
    CHECK_FALSE(redis.log().gave_up());
    CHECK_FALSE(http.log().gave_up());
    bool said = false;
    for (const auto &line : waited.logged) said = said || contains(line, "for another machine's build; building here");
    CHECK(said);
  }
  CHECK(redis.log().count_of("SET") > 1);  // it did ask again, and did not spin
  CHECK(redis.log().count_of("SET") < 100);
}

TEST_CASE("remote hostile: a cancel ends the wait for a contradicting server within a pause") {
  FakeRedis redis = contradicting_redis();
  FakeHttp http = contradicting_http();
  for (const std::string &url : {redis.url(), http.url()}) {
    CAPTURE(url);
    kiln::CancelToken cancel;
    std::thread canceller([&cancel] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cancel.cancel();
    });
    const LeaseWait waited = wait_for_lease(url, 900, &cancel);
    canceller.join();
    CHECK_FALSE(waited.lease);
    CHECK(waited.seconds >= 0.25);  // it did wait, until the cancel
    CHECK(waited.seconds < 2);
    CHECK_FALSE(redis.log().gave_up());
    CHECK_FALSE(http.log().gave_up());
  }
}

TEST_CASE("remote hostile: kiln remote pull against a contradicting Redis ends at lease_wait, and at SIGTERM") {
  kiln::test::BuildRecipeDir fx;
  FakeRedis redis = contradicting_redis();
  const auto conf = fx.cache().parent_path() / "kiln.conf";
  // A machine that writes and takes unsigned entries: one that waits on leases.
  kiln::test::write_text(conf, "remote = " + redis.url() + ";read-write\naccept-unsigned = yes\nlease_wait = 1\n");
  auto env = fx.cli_env();
  env["KILN_CONFIG"] = conf.string();
  const auto start = Clock::now();
  const auto pulled = kiln::test::run_kiln({"remote", "pull", fx.recipe_file().string()}, env);
  CAPTURE(pulled.err);
  CHECK(pulled.exit_code == 3);  // not found: no remote has it
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() >= 0.9);  // it waited on the lease
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 6);

  FakeRedis patient = contradicting_redis();  // a fresh one: the first may be near giving up
  kiln::test::write_text(conf, "remote = " + patient.url() + ";read-write\naccept-unsigned = yes\nlease_wait = 900\n");
  std::string command = "{ env";  // one group: run_shell's redirections then take all of it
  for (const auto &[name, value] : env) command += " " + kiln::test::shell_quote(name + "=" + value);
  command += " timeout -s KILL 7 " + kiln::test::kiln_cli_command() + " remote pull " +
             kiln::test::shell_quote(fx.recipe_file().string()) + " & pid=$!; sleep 1.5; kill -TERM $pid; wait $pid; }";
  const auto stopped_at = Clock::now();
  const auto stopped = kiln::test::run_shell(command);
  CAPTURE(stopped.err);
  CHECK(stopped.exit_code != 137);  // not killed by the 7 s timer: SIGTERM ended it
  CHECK(std::chrono::duration<double>(Clock::now() - stopped_at).count() < 5);
  CHECK(contains(stopped.err, "cancelled while waiting for another machine's build"));
  CHECK_FALSE(redis.log().gave_up());
  CHECK_FALSE(patient.log().gave_up());
}

TEST_CASE("remote hostile: a Redis reply is only what its command can answer, bounded before it is built") {
  const auto get = [](remote::Backend &backend) { backend.get("cas/tests/" + kInputKey); };
  SUBCASE("GET answered by an array of 25 million integers: refused at its header, not after the timeout") {
    FakeRedis redis([](const std::vector<std::string> &command) -> std::string {
      if (command[0] != "GET") return "+OK\r\n";
      return "*25000000\r\n:1\r\n:1\r\n:1\r\n";  // and the rest never comes
    });
    const auto start = Clock::now();
    const std::string message = redis_error(redis, get, ";max-size=1M");
    CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 1.5);
    CHECK(contains(message, "an array of 25000000 elements"));
    CHECK(contains(message, redis.url()));
  }
  SUBCASE("one reply followed by another nobody asked for: refused (it would answer the next request)") {
    FakeRedis redis([](const std::vector<std::string> &) -> std::string { return "$-1\r\n:1\r\n"; });
    CHECK(contains(redis_error(redis, get), "more than the one reply"));
  }
  SUBCASE("wrong types for each command") {
    struct Case {
      const char *command;
      std::string reply;
      std::function<void(remote::Backend &)> call;
    };
    const std::vector<Case> cases = {
        {"GET", ":7\r\n", get},
        {"GET", "*1\r\n$1\r\nx\r\n", get},
        {"SET", "$2\r\nOK\r\n", [](remote::Backend &b) { b.put_new("cas/tests/" + kInputKey, "v"); }},
        {"SET", ":1\r\n", [](remote::Backend &b) { b.acquire_lease("lease/tests/" + kInputKey, "me", 30); }},
        {"PING", "*2\r\n:1\r\n:2\r\n", [](remote::Backend &b) { b.ping(); }},
        {"EVAL", "$1\r\n1\r\n", [](remote::Backend &b) { b.renew_lease("lease/tests/" + kInputKey, "me", 30); }},
        {"DEL", "+OK\r\n", [](remote::Backend &b) { b.break_lease("lease/tests/" + kInputKey); }},
    };
    for (const auto &item : cases) {
      CAPTURE(item.command);
      CAPTURE(item.reply);
      FakeRedis redis([&item](const std::vector<std::string> &) { return item.reply; });
      const std::string message = redis_error(redis, item.call);
      CHECK(contains(message, item.command));
      CHECK(contains(message, "is this a Redis server?"));
    }
  }
  SUBCASE("a status line longer than max-size: refused") {
    FakeRedis redis([](const std::vector<std::string> &) { return "+" + std::string(3 << 20, 'x') + "\r\n"; });
    CHECK(contains(redis_error(redis, get, ";max-size=1M"), "max_bytes"));
  }
}
