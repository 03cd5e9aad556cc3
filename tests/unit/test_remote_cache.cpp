// The fleet cache end to end against real servers (nginx with WebDAV, redis-server, started by
// the ctest fixture remote_servers: tests/remote/servers). Two cache directories stand for two
// machines; the counting nvcc wrapper tells how many compiles ran in all.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/bundle.hpp>
#include <kiln/ext/example.h>
#include <kiln/recipe.hpp>
#include <kiln/remote.hpp>
#include <kiln/runtime.hpp>

#include "remote/backend.hpp"
#include "remote/cache.hpp"
#include "store/storage.hpp"
#include "support/build_recipe.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"
#include "support/remote_servers.hpp"

using namespace kiln;
using kiln::test::BuildRecipeDir;
using kiln::test::fresh_remote_namespaces;
using kiln::test::read_text;
using kiln::test::RemoteNamespaces;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;
namespace remote = kiln::remote;

namespace {

// Two machines sharing the fixture's recipe and nvcc: the fixture's cache (A) and a second (B).
struct Fleet {
  BuildRecipeDir fx;
  fs::path cache_b = fx.cache().parent_path() / "cache-b";
  fs::path nvcc_log = fx.cache().parent_path() / "nvcc.log";
  std::vector<std::string> logged;

  RuntimeOptions options(const fs::path &cache) {
    RuntimeOptions options = fx.options([this](LogLevel, const std::string &message) { logged.push_back(message); });
    options.cache_dir = cache.string();
    return options;
  }
  int compiles() {
    int count = 0;
    std::istringstream lines(fs::exists(nvcc_log) ? read_text(nvcc_log) : "");
    for (std::string line; std::getline(lines, line);) count += line.rfind("-c ", 0) == 0;
    return count;
  }
  bool logged_with(const std::string &text) const {
    for (const auto &line : logged) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }
};


std::unique_ptr<remote::Backend> backend_for(const std::string &spec) {
  return remote::make_backend(remote::parse_remote(spec, "test"));
}

// Pins a fresh root in the store `cache` with a key list letting `signer` sign for `role` (kiln
// key init / add / trust, as a fleet's robot image is made), its files in `dir`.
void pin_fleet_root(const fs::path &dir, const fs::path &cache, const KeyPair &signer, const std::string &role) {
  const KeyPair root = generate_keypair((dir / "root").string());
  const std::string list = (dir / "fleet-keys.json").string();
  const auto env = kiln::test::cli_env(cache);
  for (const std::vector<std::string> &args :
       {std::vector<std::string>{"key", "init", list, "--root", root.secret_file},
        std::vector<std::string>{"key", "add", list, "--root", root.secret_file, "--key", signer.public_file, "--role",
                                 role},
        std::vector<std::string>{"key", "trust", "--root", root.public_file, "--key-list", list}}) {
    const auto result = kiln::test::run_kiln(args, env);
    REQUIRE_MESSAGE(result.exit_code == 0, args[1] << ": " << result.out << result.err);
  }
}

constexpr char kNotAsked[] = "remote caches are not asked for entries: no key is trusted";

}  // namespace

TEST_SUITE("remote") {

TEST_CASE("remote: a build uploads; a second machine downloads, verifies and loads it without compiling" *
          kiln::test::skip_if(kiln::test::no_remote_servers)) {
  for (const bool redis : {false, true}) {
    CAPTURE(redis);
    Fleet fleet;
    const RemoteNamespaces remotes = fresh_remote_namespaces();
    const std::string url = redis ? remotes.redis : remotes.http;
    TempDir keys;
    const KeyPair pair = generate_keypair((keys / "fleet").string());
    ScopedEnv remote_env("KILN_REMOTE", url), sign("KILN_REMOTE_SIGN", pair.secret_file),
        trust("KILN_REMOTE_TRUST", pair.public_file);

    Runtime a(fleet.options(fleet.fx.cache()));
    const BuildResult built = a.build(fleet.fx.recipe());
    CHECK(built.outcome == BuildResult::Outcome::built);
    REQUIRE(built.uploads.size() == 1);
    CHECK(built.uploads[0].status == "uploaded");
    CHECK(fleet.compiles() == 2);
    const double expected = kiln::test::two_units_answer(a);

    // A transfer's file lives in a staging directory: a killed transfer's (its lock free) goes
    // with the next writer, a live one's (its lock held) stays.
    const fs::path entries_b = fleet.cache_b / "consumers" / "build-tests" / "store";
    const fs::path dead = entries_b / ".staging-v2-00000000deadbeef";
    fs::create_directories(dead);
    write_text(dead / store::kStagingLockFile, "");
    write_text(dead / "transfer.kbundle", "partial");
    const store::Storage live_writer({store::StoreLocation{fleet.cache_b, true, "test"}});
    const store::Staging live = live_writer.stage("build-tests", {});
    write_text(live.dir() / "transfer.kbundle", "partial");
    Runtime b(fleet.options(fleet.cache_b));
    const BuildPlan plan = b.plan(fleet.fx.recipe());
    CHECK(plan.state == "missing");
    CHECK(plan.source.rfind("remote ", 0) == 0);
    const BuildResult fetched = b.build(fleet.fx.recipe());
    CHECK(fetched.outcome == BuildResult::Outcome::fetched);
    CHECK(fetched.content_key == built.content_key);
    CHECK(fetched.remote_signed_by == pair.key_id);
    CHECK(fetched.input_key == built.input_key);
    CHECK_FALSE(fetched.remote.empty());
    CHECK(fleet.compiles() == 2);  // none on B
    CHECK(kiln::test::two_units_answer(b) == expected);
    CHECK(fleet.logged_with("signed by " + pair.key_id));
    CHECK_FALSE(fs::exists(dead));
    CHECK(fs::exists(live.dir() / "transfer.kbundle"));
    // B now has it locally: the next build is a hit that asks no remote.
    CHECK(b.build(fleet.fx.recipe()).outcome == BuildResult::Outcome::hit);
    CHECK(b.plan(fleet.fx.recipe()).source == "local");
  }
}

TEST_CASE("remote: a read-only remote is read, never written" * kiln::test::skip_if(kiln::test::no_remote_servers)) {
  Fleet fleet;
  const RemoteNamespaces remotes = fresh_remote_namespaces();
  ScopedEnv remote_env("KILN_REMOTE", remotes.http + ";read-only|" + remotes.redis + ";read-only");
  Runtime a(fleet.options(fleet.fx.cache()));
  const BuildResult built = a.build(fleet.fx.recipe());
  CHECK(built.outcome == BuildResult::Outcome::built);
  CHECK(built.uploads.empty());
  for (const auto &spec : {remotes.http, remotes.redis}) {
    const auto backend = backend_for(spec);
    CHECK_FALSE(backend->get("ac/build-tests/" + built.input_key));
    CHECK_FALSE(backend->get("cas/build-tests/" + built.content_key));
  }
  CHECK_THROWS_AS(a.remote_push("build-tests"), UsageError);
}

TEST_CASE("remote: untrusted, unsigned, tampered and truncated entries are misses, and B builds itself" *
          kiln::test::skip_if(kiln::test::no_remote_servers)) {
  Fleet fleet;
  const RemoteNamespaces source = fresh_remote_namespaces();
  TempDir keys;
  const KeyPair signer = generate_keypair((keys / "signer").string());
  const KeyPair other = generate_keypair((keys / "other").string());
  std::string input_key, content_key;
  {
    ScopedEnv remote_env("KILN_REMOTE", source.redis), sign("KILN_REMOTE_SIGN", signer.secret_file);
    Runtime a(fleet.options(fleet.fx.cache()));
    const BuildResult built = a.build(fleet.fx.recipe());
    input_key = built.input_key;
    content_key = built.content_key;
  }
  const std::string signed_bundle = *backend_for(source.redis)->get("cas/build-tests/" + content_key);
  std::string unsigned_bundle;
  {
    // Unsigned: a machine with no signing key writes only where the spec says read-write.
    ScopedEnv remote_env("KILN_REMOTE", source.http + ";read-write"), sign("KILN_REMOTE_SIGN", std::nullopt);
    Runtime a(fleet.options(fleet.fx.cache()));
    CHECK(a.remote_push("build-tests").at(0).status == "uploaded");
    unsigned_bundle = *backend_for(source.http)->get("cas/build-tests/" + content_key);
  }
  std::string tampered = signed_bundle;
  tampered[tampered.size() / 2] = static_cast<char>(tampered[tampered.size() / 2] ^ 0x40);
  const struct {
    const char *what;
    std::string body;
    std::string trust;
  } cases[] = {
      {"signed by a key not trusted", signed_bundle, other.public_file},
      {"unsigned where keys are trusted", unsigned_bundle, signer.public_file},
      {"a byte changed", tampered, signer.public_file},
      {"cut short", signed_bundle.substr(0, signed_bundle.size() / 2), signer.public_file},
  };
  for (const auto &item : cases) {
    CAPTURE(item.what);
    const RemoteNamespaces served = fresh_remote_namespaces();
    for (const auto &spec : {served.http, served.redis}) {
      const auto backend = backend_for(spec);
      REQUIRE(backend->put_new("ac/build-tests/" + input_key, content_key));
      REQUIRE(backend->put_new("cas/build-tests/" + content_key, item.body));
    }
    for (const auto &spec : {served.http, served.redis}) {
      TempDir cache;
      ScopedEnv remote_env("KILN_REMOTE", spec + ";read-only"), trust("KILN_REMOTE_TRUST", item.trust);
      const int before = fleet.compiles();
      fleet.logged.clear();
      Runtime b(fleet.options(cache.path() / "cache"));
      const BuildResult result = b.build(fleet.fx.recipe());
      CHECK(result.outcome == BuildResult::Outcome::built);
      CHECK(fleet.compiles() == before + 2);
      CHECK(fleet.logged_with("refused"));
      CHECK_FALSE(fs::exists(cache.path() / "cache" / "consumers" / "build-tests" / "store" / ".staging"));
    }
  }
  // The genuine entry, trusted: fetched.
  {
    const RemoteNamespaces served = fresh_remote_namespaces();
    const auto backend = backend_for(served.redis);
    REQUIRE(backend->put_new("ac/build-tests/" + input_key, content_key));
    REQUIRE(backend->put_new("cas/build-tests/" + content_key, signed_bundle));
    TempDir cache;
    ScopedEnv remote_env("KILN_REMOTE", served.redis), trust("KILN_REMOTE_TRUST", signer.public_file);
    Runtime b(fleet.options(cache.path() / "cache"));
    CHECK(b.build(fleet.fx.recipe()).outcome == BuildResult::Outcome::fetched);
  }
}

TEST_CASE("remote: a machine with no signing key writes nothing to a remote whose spec does not say read-write" *
          kiln::test::skip_if(kiln::test::no_remote_servers)) {
  for (const bool redis : {false, true}) {
    CAPTURE(redis);
    Fleet fleet;
    const RemoteNamespaces remotes = fresh_remote_namespaces();
    const std::string url = redis ? remotes.redis : remotes.http;
    // It reads the remote (accept-unsigned): only the policy on writes keeps the remote empty.
    ScopedEnv remote_env("KILN_REMOTE", url), sign("KILN_REMOTE_SIGN", std::nullopt),
        trust("KILN_REMOTE_TRUST", std::nullopt), accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::string("yes"));
    Runtime a(fleet.options(fleet.fx.cache()));
    CHECK(a.remote_status().remotes.at(0).read_only);
    const BuildResult built = a.build(fleet.fx.recipe());
    CHECK(built.outcome == BuildResult::Outcome::built);
    CHECK(built.uploads.empty());
    const auto server = backend_for(url);
    CHECK_FALSE(server->get("ac/build-tests/" + built.input_key));
    CHECK_FALSE(server->get("cas/build-tests/" + built.content_key));
    CHECK_FALSE(server->current_lease("lease/build-tests/" + built.input_key));
    CHECK_THROWS_AS(a.remote_push("build-tests"), UsageError);

    // The same machine, its spec saying read-write: it uploads.
    ScopedEnv read_write("KILN_REMOTE", url + ";read-write");
    Runtime writer(fleet.options(fleet.fx.cache()));
    CHECK_FALSE(writer.remote_status().remotes.at(0).read_only);
    const auto pushed = writer.remote_push("build-tests");
    REQUIRE(pushed.size() == 1);
    CHECK(pushed[0].status == "uploaded");
    CHECK(server->get("cas/build-tests/" + built.content_key));
  }
}

TEST_CASE(
    "remote: a signed entry is taken only where a trusted key, a pinned root's build key or accept-unsigned "
    "vouches for it" *
    kiln::test::skip_if(kiln::test::no_remote_servers)) {
  Fleet fleet;
  const RemoteNamespaces remotes = fresh_remote_namespaces();
  TempDir keys;
  const KeyPair builder = generate_keypair((keys / "builder").string());
  BuildResult built;
  {
    // The build machine signs: it writes every remote whose spec does not say read-only.
    ScopedEnv remote_env("KILN_REMOTE", remotes.http + "|" + remotes.redis),
        sign("KILN_REMOTE_SIGN", builder.secret_file), trust("KILN_REMOTE_TRUST", std::nullopt),
        accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::nullopt);
    Runtime a(fleet.options(fleet.fx.cache()));
    built = a.build(fleet.fx.recipe());
    REQUIRE(built.uploads.size() == 2);
    CHECK(built.uploads[0].status == "uploaded");
    CHECK(built.uploads[1].status == "uploaded");
  }
  int compiles = fleet.compiles();
  for (const auto &spec : {remotes.http, remotes.redis}) {
    CAPTURE(spec);
    ScopedEnv remote_env("KILN_REMOTE", spec), sign("KILN_REMOTE_SIGN", std::nullopt),
        trust("KILN_REMOTE_TRUST", std::nullopt);
    const auto build_in = [&](const fs::path &cache) {
      fleet.logged.clear();
      Runtime machine(fleet.options(cache));
      return machine.build(fleet.fx.recipe());
    };
    {
      // Nothing vouches: the remote is not asked (one warning says why), and the machine builds;
      // its plan says so rather than naming the remote.
      ScopedEnv accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::nullopt);
      TempDir cache;
      CHECK(Runtime(fleet.options(cache.path() / "cache")).plan(fleet.fx.recipe()).source == "build");
      const BuildResult result = build_in(cache.path() / "cache");
      CHECK(result.outcome == BuildResult::Outcome::built);
      CHECK(result.content_key == built.content_key);
      CHECK(fleet.compiles() == (compiles += 2));
      CHECK(std::count_if(fleet.logged.begin(), fleet.logged.end(),
                          [](const std::string &line) { return line.find(kNotAsked) != std::string::npos; }) == 1);
      CHECK_FALSE(fleet.logged_with("refused"));  // never downloaded, so never judged
    }
    {
      // accept-unsigned: taken, checked for damage only.
      ScopedEnv accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::string("yes"));
      TempDir cache;
      CHECK(Runtime(fleet.options(cache.path() / "cache")).plan(fleet.fx.recipe()).source.rfind("remote ", 0) == 0);
      const BuildResult result = build_in(cache.path() / "cache");
      CHECK(result.outcome == BuildResult::Outcome::fetched);
      CHECK(result.content_key == built.content_key);
      CHECK(result.remote_signed_by.empty());
      CHECK(fleet.compiles() == compiles);
      CHECK(fleet.logged_with("signature not checked: accept-unsigned"));
      CHECK_FALSE(fleet.logged_with(kNotAsked));
    }
    ScopedEnv accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::nullopt);
    {
      // A pinned root whose key list lets the builder's key sign builds: taken, its signer checked.
      TempDir cache, fleet_keys;
      pin_fleet_root(fleet_keys.path(), cache.path() / "cache", builder, "build");
      const BuildResult result = build_in(cache.path() / "cache");
      CHECK(result.outcome == BuildResult::Outcome::fetched);
      CHECK(result.content_key == built.content_key);
      CHECK(result.remote_signed_by == builder.key_id);
      CHECK(fleet.compiles() == compiles);
      CHECK(fleet.logged_with("signed by " + builder.key_id));
    }
    {
      // The same root letting that key sign releases only: refused, and the machine builds.
      TempDir cache, fleet_keys;
      pin_fleet_root(fleet_keys.path(), cache.path() / "cache", builder, "release");
      const BuildResult result = build_in(cache.path() / "cache");
      CHECK(result.outcome == BuildResult::Outcome::built);
      CHECK(fleet.compiles() == (compiles += 2));
      CHECK(fleet.logged_with("may sign for release, not build"));
    }
  }
  // The CLI says it at the default verbosity.
  auto env = fleet.fx.cli_env();
  env["KILN_CACHE_DIR"] = fleet.cache_b.string();
  env["KILN_REMOTE"] = remotes.http;
  const auto cli = kiln::test::run_kiln({"build", fleet.fx.recipe_file().string()}, env);
  CHECK(cli.exit_code == 0);
  CHECK_MESSAGE(cli.err.find(kNotAsked) != std::string::npos, cli.err);
}

TEST_CASE("remote: a machine that could take nothing a remote serves does not wait on its build leases" *
          kiln::test::skip_if(kiln::test::no_remote_servers)) {
  for (const bool redis : {false, true}) {
    CAPTURE(redis);
    Fleet fleet;
    const RemoteNamespaces remotes = fresh_remote_namespaces();
    const std::string url = redis ? remotes.redis : remotes.http;
    // Writable, so that only the missing vouching keeps it from the lease; a lease_wait that a
    // machine waiting on the lease would show.
    const fs::path conf = fleet.fx.cache().parent_path() / "kiln.conf";
    write_text(conf, "lease_wait = 10\n");
    ::chmod(conf.c_str(), 0644);
    ScopedEnv config("KILN_CONFIG", conf.string()), remote_env("KILN_REMOTE", url + ";read-write"),
        sign("KILN_REMOTE_SIGN", std::nullopt), trust("KILN_REMOTE_TRUST", std::nullopt),
        accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::nullopt);
    Runtime a(fleet.options(fleet.fx.cache()));
    const std::string key = "lease/build-tests/" + a.plan(fleet.fx.recipe()).input_key;
    // Another machine's live build holds the lease: a machine that took leases would wait for it
    // (lease_wait) and then take its upload, which this one would refuse.
    const std::string holder = "build7:4242:1";
    const auto server = backend_for(url);
    REQUIRE(server->acquire_lease(key, holder, 30));
    const auto start = std::chrono::steady_clock::now();
    const BuildResult built = a.build(fleet.fx.recipe());
    CHECK(built.outcome == BuildResult::Outcome::built);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(8));
    CHECK(fleet.logged_with(kNotAsked));
    CHECK_FALSE(fleet.logged_with("another machine builds it"));
    const auto lease = server->current_lease(key);
    REQUIRE(lease.has_value());
    CHECK(lease->rfind(holder, 0) == 0);  // not taken over, not released
  }
}

TEST_CASE("remote: a remote that is down or black-holed costs its timeout once; the build proceeds locally" *
          kiln::test::skip_if(kiln::test::no_remote_servers)) {
  // A port nobody listens on (refused), and a socket that accepts connections into its backlog
  // but never answers (the request times out).
  const int refused_socket = ::socket(AF_INET, SOCK_STREAM, 0), hole = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(::bind(refused_socket, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0);
  REQUIRE(::getsockname(refused_socket, reinterpret_cast<sockaddr *>(&address), &length) == 0);
  const int refused_port = ntohs(address.sin_port);
  ::close(refused_socket);
  address.sin_port = 0;
  REQUIRE(::bind(hole, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0);
  REQUIRE(::listen(hole, 64) == 0);
  REQUIRE(::getsockname(hole, reinterpret_cast<sockaddr *>(&address), &length) == 0);
  const int hole_port = ntohs(address.sin_port);

  const std::string specs[] = {
      "http://127.0.0.1:" + std::to_string(refused_port) + "/kiln",
      "redis://127.0.0.1:" + std::to_string(refused_port) + "/0",
      "http://127.0.0.1:" + std::to_string(hole_port) + "/kiln;timeout=0.5;connect-timeout=0.5",
      "redis://127.0.0.1:" + std::to_string(hole_port) + "/0;timeout=0.5;connect-timeout=0.5",
  };
  for (const auto &spec : specs) {
    CAPTURE(spec);
    Fleet fleet;
    // Only a machine that could take what a remote serves asks it for entries.
    ScopedEnv remote_env("KILN_REMOTE", spec), accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::string("yes"));
    Runtime runtime(fleet.options(fleet.fx.cache()));
    const auto start = std::chrono::steady_clock::now();
    const BuildResult built = runtime.build(fleet.fx.recipe());
    CHECK(built.outcome == BuildResult::Outcome::built);
    CHECK(fleet.compiles() == 2);
    CHECK(fleet.logged_with("skipping it for"));
    // Once failed, the remote is skipped: asking again costs nothing.
    remote::RemoteConfig config;
    config.remotes.push_back(remote::parse_remote(spec, "test"));
    config.accept_unsigned = true;  // so that locate asks the remote at all
    const remote::RemoteCache cache(config, {});
    const store::Storage storage({store::StoreLocation{fleet.fx.cache(), true, "test"}});
    const auto again = std::chrono::steady_clock::now();
    CHECK_FALSE(cache.locate(storage, "build-tests", built.input_key));
    CHECK(std::chrono::steady_clock::now() - again < std::chrono::milliseconds(50));
    CHECK(cache.status().remotes.at(0).state == "skipped");
    (void)start;
  }
  ::close(hole);
}

TEST_CASE("remote: 16 processes on two machines missing one artifact compile it once; the rest download it" *
          kiln::test::skip_if(kiln::test::no_remote_servers)) {
  for (const bool redis : {true, false}) {
    CAPTURE(redis);
    Fleet fleet;
    const RemoteNamespaces remotes = fresh_remote_namespaces();
    // Unsigned uploads, taken as they are: every process writes, and waits on the lease.
    const std::string url = (redis ? remotes.redis : remotes.http) + ";read-write";
    // Slow compiles: every process is waiting while the first builds.
    std::string script = "cd " + kiln::test::shell_quote(fleet.fx.cache().parent_path().string()) + "; ";
    for (int i = 0; i < 16; ++i) {
      const fs::path cache = i % 2 == 0 ? fleet.fx.cache() : fleet.cache_b;
      std::string env;
      for (const auto &[name, value] : fleet.fx.cli_env()) {
        env += name + "=" + kiln::test::shell_quote(name == "KILN_CACHE_DIR" ? cache.string() : value) + " ";
      }
      script += "env " + env + "KILN_TEST_NVCC_DELAY=1 KILN_REMOTE_ACCEPT_UNSIGNED=yes KILN_REMOTE=" +
                kiln::test::shell_quote(url) + " " + kiln::test::kiln_cli_command() + " build --quiet --json " +
                kiln::test::shell_quote(fleet.fx.recipe_file().string()) + " > out" + std::to_string(i) +
                ".json 2> err" + std::to_string(i) + ".txt & ";
    }
    script += "wait";
    REQUIRE(kiln::test::run_shell(script).exit_code == 0);
    std::map<std::string, int> outcomes;
    for (int i = 0; i < 16; ++i) {
      const std::string out = read_text(fleet.fx.cache().parent_path() / ("out" + std::to_string(i) + ".json"));
      CAPTURE(out);
      CAPTURE(read_text(fleet.fx.cache().parent_path() / ("err" + std::to_string(i) + ".txt")));
      const auto result = nlohmann::json::parse(out);
      REQUIRE(result.contains("outcome"));
      ++outcomes[result["outcome"].get<std::string>()];
    }
    CAPTURE(outcomes["built"]);
    CAPTURE(outcomes["fetched"]);
    CAPTURE(outcomes["hit"]);
    CHECK(fleet.compiles() == 2);  // one build of the two units, on one machine
    CHECK(outcomes["built"] == 1);
    CHECK(outcomes["fetched"] == 1);  // the other machine's first process; the rest are local hits
    CHECK(outcomes["hit"] == 14);
  }
}

TEST_CASE("remote: concurrent uploads of one entry agree" * kiln::test::skip_if(kiln::test::no_remote_servers)) {
  Fleet fleet;
  const RemoteNamespaces remotes = fresh_remote_namespaces();
  Resolution resolution;
  {
    ScopedEnv remote_env("KILN_REMOTE", "off");
    Runtime a(fleet.options(fleet.fx.cache()));
    a.build(fleet.fx.recipe());
    resolution = a.resolve("build-tests", "two-units");
  }
  // Unsigned uploads, accepted as they are by the uploaders and by B.
  remote::RemoteConfig config;
  config.remotes.push_back(remote::parse_remote(remotes.http + ";read-write", "test"));
  config.remotes.push_back(remote::parse_remote(remotes.redis + ";read-write", "test"));
  config.accept_unsigned = true;
  std::vector<std::thread> threads;
  std::vector<std::vector<RemoteTransfer>> results(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      const remote::RemoteCache cache(config, {});  // one per thread: as many processes would
      const store::Storage storage({store::StoreLocation{fleet.fx.cache(), true, "test"}});
      results[i] = cache.offer(storage, resolution);
    });
  }
  for (auto &thread : threads) thread.join();
  int uploaded_to_redis = 0;
  for (const auto &transfers : results) {
    REQUIRE(transfers.size() == 2);
    for (const auto &transfer : transfers) CHECK((transfer.status == "uploaded" || transfer.status == "present"));
    uploaded_to_redis += transfers[1].status == "uploaded";
  }
  CHECK(uploaded_to_redis == 1);  // SET NX: one writer
  for (const auto &spec : {remotes.http, remotes.redis}) {
    CHECK(backend_for(spec)->get("ac/build-tests/" + resolution.input_key) == resolution.content_key);
    TempDir cache;
    ScopedEnv remote_env("KILN_REMOTE", spec), accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::string("yes"));
    Runtime b(fleet.options(cache.path() / "cache"));
    CHECK(b.build(fleet.fx.recipe()).outcome == BuildResult::Outcome::fetched);
  }
}

TEST_CASE("remote: a lease left by a killed build of this machine is taken over at once, not after 30 s" *
          kiln::test::skip_if(kiln::test::no_remote_servers)) {
  for (const bool redis : {false, true}) {
    CAPTURE(redis);
    Fleet fleet;
    const RemoteNamespaces remotes = fresh_remote_namespaces();
    const std::string url = redis ? remotes.redis : remotes.http;
    // No signing key: the lease and the upload need read-write, and the lease is taken only by a
    // machine that could take another's upload.
    ScopedEnv remote_env("KILN_REMOTE", url + ";read-write"), sign("KILN_REMOTE_SIGN", std::nullopt),
        accept("KILN_REMOTE_ACCEPT_UNSIGNED", std::string("yes"));
    Runtime a(fleet.options(fleet.fx.cache()));
    const std::string key = "lease/build-tests/" + a.plan(fleet.fx.recipe()).input_key;
    // What a build SIGKILLed while holding the lease leaves: the lease, its holder gone.
    const auto server = backend_for(url);
    REQUIRE(server->acquire_lease(key, kiln::test::gone_lease_holder(), 30));
    const BuildResult built = a.build(fleet.fx.recipe());
    CHECK(built.outcome == BuildResult::Outcome::built);
    CHECK(fleet.logged_with("a process of this machine that is gone; taking it over"));
    CHECK_FALSE(fleet.logged_with("was not renewed"));
    REQUIRE(built.uploads.size() == 1);
    CHECK(built.uploads[0].status == "uploaded");
    CHECK_FALSE(server->current_lease(key).has_value());  // the build's own lease, released
  }
}

TEST_CASE("remote: kiln remote status, push and pull" * kiln::test::skip_if(kiln::test::no_remote_servers)) {
  Fleet fleet;
  const RemoteNamespaces remotes = fresh_remote_namespaces();
  auto env = fleet.fx.cli_env();
  // No key on either side: push needs read-write, and pull takes the unsigned entry only with accept-unsigned.
  env["KILN_REMOTE"] = remotes.http + ";read-write|" + remotes.redis + ";read-write";
  env["KILN_REMOTE_ACCEPT_UNSIGNED"] = "yes";
  const auto status = kiln::test::run_kiln({"remote", "status", "--json"}, env);
  CAPTURE(status.out);
  CAPTURE(status.err);
  CHECK(status.exit_code == 0);
  const auto report = nlohmann::json::parse(status.out);
  REQUIRE(report["remotes"].size() == 2);
  CHECK(report["remotes"][0]["state"] == "ok");
  CHECK(report["remotes"][1]["state"] == "ok");
  CHECK(report["remotes"][1]["detail"] == "PONG");
  CHECK(report["remotes"][0]["read_only"] == false);
  CHECK(report["accept_unsigned"] == true);

  // Nothing there yet: pull is "not found" and compiles nothing.
  const auto missing = kiln::test::run_kiln({"remote", "pull", fleet.fx.recipe_file().string()}, env);
  CHECK(missing.exit_code == 3);
  CHECK(missing.err.find("no remote cache has build-tests/two-units") != std::string::npos);
  CHECK(fleet.compiles() == 0);

  auto local = env;
  local["KILN_REMOTE"] = "off";
  REQUIRE(kiln::test::run_kiln({"build", "--quiet", fleet.fx.recipe_file().string()}, local).exit_code == 0);
  const auto pushed = kiln::test::run_kiln({"remote", "push", "--consumer", "build-tests", "--json"}, env);
  CAPTURE(pushed.out);
  CHECK(pushed.exit_code == 0);
  const auto transfers = nlohmann::json::parse(pushed.out)["transfers"];
  REQUIRE(transfers.size() == 2);
  CHECK(transfers[0]["status"] == "uploaded");
  CHECK(transfers[1]["status"] == "uploaded");

  auto other = env;
  other["KILN_CACHE_DIR"] = fleet.cache_b.string();
  const auto plan = kiln::test::run_kiln({"build", "--plan", "--json", fleet.fx.recipe_file().string()}, other);
  CHECK(nlohmann::json::parse(plan.out)["source"].get<std::string>().rfind("remote ", 0) == 0);
  const auto pulled = kiln::test::run_kiln({"remote", "pull", "--json", fleet.fx.recipe_file().string()}, other);
  CAPTURE(pulled.err);
  CHECK(pulled.exit_code == 0);
  const auto pulled_report = nlohmann::json::parse(pulled.out);
  CHECK(pulled_report["outcome"] == "fetched");
  // No key is trusted: the fetch says, at the default verbosity and in --json, that nobody vouched for it.
  CHECK(pulled_report["signature_verified"] == false);
  CHECK(pulled_report["signed_by"].is_null());
  CHECK(pulled.err.find("signature not checked") != std::string::npos);
  CHECK(fleet.compiles() == 2);
  const auto loaded = kiln::test::run_kiln({"load", "build-tests", "two-units"}, other);
  CHECK(loaded.exit_code == 0);
}

}  // TEST_SUITE
