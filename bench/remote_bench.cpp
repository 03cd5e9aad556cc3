// The fleet cache on loopback (docs/remote-cache.md), against a baseline in
// the same run: the real nginx (WebDAV) and redis-server started by tests/remote/servers.
//  (a) fetch-on-miss of the IK plugin (kiln-ik/iiwa14, built for sm_90) into an empty cache,
//      from nginx and from Redis, against building it locally into an empty cache;
//  (b) 32 clients (threads, each with its own Runtime and empty cache) fetching it at once:
//      total throughput and the per-client median;
//  (c) an unchanged build (a hit) with a remote configured -- a black hole that would cost a
//      1 s timeout if the hit asked it -- against the same hit with no remote.
//
//   kiln_bench_remote [--runs N] [--build-runs N] [--clients N] [--recipe FILE]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/filesystem/operations.hpp>

#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "bench_stats.hpp"
#include "support/elapsed.hpp"

namespace {

namespace fs = boost::filesystem;
using kiln::support::seconds_since;
using Clock = std::chrono::steady_clock;

struct Servers {
  fs::path dir;
  std::string http, redis;
  bool started = false;
  void stop() {
    if (started) std::system(("'" + std::string(KILN_BENCH_SERVERS_SCRIPT) + "' stop '" + dir.string() + "'").c_str());
    started = false;
  }
  ~Servers() { stop(); }
};

std::string env_file_value(const fs::path &file, const std::string &name) {
  FILE *in = std::fopen(file.c_str(), "r");
  if (in == nullptr) return "";
  char line[4096];
  std::string value;
  while (std::fgets(line, sizeof line, in) != nullptr) {
    std::string text(line);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.rfind(name + "=", 0) == 0) value = text.substr(name.size() + 1);
  }
  std::fclose(in);
  return value;
}

void set_remote(const std::string &value) { ::setenv("KILN_REMOTE", value.c_str(), 1); }

// One build of the recipe into `cache` (a fresh Runtime, as a fresh process would): seconds.
double build_into(const fs::path &cache, const kiln::Recipe &recipe, kiln::BuildResult::Outcome expected,
                  const char *what) {
  kiln::RuntimeOptions options;
  options.cache_dir = cache.string();
  options.declared_device = "sm_90";
  const auto start = Clock::now();
  kiln::Runtime runtime(options);
  kiln::BuildOptions build;
  build.archs = {kiln::Arch::parse("sm_90")};
  const kiln::BuildResult result = runtime.build(recipe, build);
  const double seconds = seconds_since(start);
  if (result.outcome != expected) {
    throw std::runtime_error(std::string(what) + ": outcome " + kiln::to_string(result.outcome) + ", expected " +
                             kiln::to_string(expected));
  }
  return seconds;
}

}  // namespace

static int bench_main(int argc, char **argv) {
  int runs = 10, build_runs = 2, clients = 32;
  std::string recipe_file = KILN_BENCH_IK_RECIPES "/iiwa14.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--runs") runs = std::atoi(argv[i + 1]);
    else if (flag == "--build-runs") build_runs = std::atoi(argv[i + 1]);
    else if (flag == "--clients") clients = std::atoi(argv[i + 1]);
    else if (flag == "--recipe") recipe_file = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: kiln_bench_remote [--runs N] [--build-runs N] [--clients N] [--recipe FILE]\n");
      return 2;
    }
  }
  if (runs < 1 || build_runs < 1 || clients < 1) {
    std::fprintf(stderr, "kiln_bench_remote: --runs, --build-runs and --clients must be at least 1\n");
    return 2;
  }
  const fs::path work = fs::temp_directory_path() / fs::unique_path("kiln-bench-remote-%%%%%%%%");
  fs::create_directories(work);
  ::unsetenv("KILN_REMOTE_TRUST");
  ::unsetenv("KILN_REMOTE_SIGN");
  ::unsetenv("KILN_CONFIG");
  // Unsigned entries, as the published figures were measured: the upload needs read-write (no
  // signing key), the fetches accept-unsigned (no trusted key).
  ::setenv("KILN_REMOTE_ACCEPT_UNSIGNED", "yes", 1);
  Servers servers;
  servers.dir = work / "servers";
  if (std::system(("'" + std::string(KILN_BENCH_SERVERS_SCRIPT) + "' start '" + servers.dir.string() + "' >/dev/null").c_str()) != 0) {
    std::fprintf(stderr, "kiln_bench_remote: could not start the servers (%s)\n", KILN_BENCH_SERVERS_SCRIPT);
    return 1;
  }
  servers.started = true;
  const fs::path env = servers.dir / "servers.env";
  if (const std::string skip = env_file_value(env, "KILN_TEST_SERVERS_SKIP"); !skip.empty()) {
    std::printf("kiln_bench_remote: skipped: %s\n", skip.c_str());
    return 0;
  }
  servers.http = env_file_value(env, "KILN_TEST_HTTP_URL") + "/bench";
  servers.redis = env_file_value(env, "KILN_TEST_REDIS_URL") + ";prefix=bench:";
  const kiln::Recipe recipe = kiln::Recipe::load(recipe_file);
  int cache_number = 0;
  const auto fresh_cache = [&] { return work / ("cache-" + std::to_string(cache_number++)); };

  std::printf("kiln_bench_remote: %s/%s from %s, sm_90, loopback servers (nginx %s, redis %s)\n",
              recipe.consumer.c_str(), recipe.name.c_str(), recipe_file.c_str(), servers.http.c_str(),
              servers.redis.c_str());

  // (a) the baseline: local builds into empty caches (the object cache empty too); then one
  // build uploads to both remotes.
  set_remote("off");
  std::vector<double> local;
  for (int i = 0; i < build_runs; ++i) {
    local.push_back(build_into(fresh_cache(), recipe, kiln::BuildResult::Outcome::built, "local build"));
  }
  set_remote(servers.http + ";read-write|" + servers.redis + ";read-write");
  const double upload = build_into(fresh_cache(), recipe, kiln::BuildResult::Outcome::built, "build + upload");
  const double build_s = kiln_bench::median(local);
  std::printf("\n(a) fetch on miss into an empty cache vs building locally (median of %d; local builds: %d)\n", runs,
              build_runs);
  std::printf("    local build              %9.3f s\n", build_s);
  std::printf("    build + upload (both)    %9.3f s\n", upload);
  double http_fetch_s = 0;
  for (const auto &[label, remote] : {std::pair<const char *, std::string>{"nginx (HTTP)", servers.http},
                                      {"Redis", servers.redis}}) {
    set_remote(remote);
    std::vector<double> fetches;
    for (int i = 0; i < runs; ++i) {
      fetches.push_back(build_into(fresh_cache(), recipe, kiln::BuildResult::Outcome::fetched, label));
    }
    const double fetch_s = kiln_bench::median(fetches);
    if (http_fetch_s == 0) http_fetch_s = fetch_s;
    std::printf("    fetch from %-13s %9.3f ms   %7.0fx faster than the local build\n", label, fetch_s * 1000,
                build_s / fetch_s);
  }

  // (b) many clients at once, from nginx.
  set_remote(servers.http);
  std::vector<double> per_client(static_cast<std::size_t>(clients));
  std::vector<fs::path> caches;
  for (int i = 0; i < clients; ++i) caches.push_back(fresh_cache());
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      per_client[static_cast<std::size_t>(i)] =
          build_into(caches[static_cast<std::size_t>(i)], recipe, kiln::BuildResult::Outcome::fetched, "client");
    });
  }
  for (auto &thread : threads) thread.join();
  const double wall = seconds_since(start);
  std::uintmax_t bytes = 0;
  for (fs::recursive_directory_iterator it(caches.front() / "consumers"), end; it != end; ++it) {
    if (fs::is_regular_file(it->path())) bytes += fs::file_size(it->path());
  }
  std::printf("\n(b) %d clients fetching at once from nginx (%ju bytes of entry each)\n", clients, bytes);
  std::printf("    total %.3f s: %.1f fetches/s, %.1f MB/s of entries; per-client median %.3f ms (one alone: %.3f ms)\n",
              wall, clients / wall, static_cast<double>(bytes) * clients / wall / 1e6, kiln_bench::median(per_client) * 1000,
              http_fetch_s * 1000);

  // (c) a local hit with a remote configured: a black hole, so any remote call would cost 1 s.
  const int hole = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(hole, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 || ::listen(hole, 64) != 0 ||
      ::getsockname(hole, reinterpret_cast<sockaddr *>(&address), &length) != 0) {
    std::fprintf(stderr, "kiln_bench_remote: cannot open a loopback socket: %s\n", std::strerror(errno));
    return 1;
  }
  const std::string black_hole = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/kiln;timeout=1;connect-timeout=1";
  const fs::path hit_cache = caches.front();
  std::vector<double> with_remote, without;
  for (int i = 0; i < std::max(runs, 20) * 5; ++i) {
    set_remote(i % 2 == 0 ? black_hole : "off");
    const double seconds = build_into(hit_cache, recipe, kiln::BuildResult::Outcome::hit, "hit");
    (i % 2 == 0 ? with_remote : without).push_back(seconds);
  }
  ::close(hole);
  const double with_ms = kiln_bench::median(with_remote) * 1000, without_ms = kiln_bench::median(without) * 1000;
  std::printf("\n(c) an unchanged build (hit, fresh Runtime) with a remote configured vs none (median of %zu each)\n",
              with_remote.size());
  std::printf("    remote configured (a black hole, 1 s timeout)  %.3f ms\n", with_ms);
  std::printf("    no remote                                      %.3f ms\n", without_ms);
  std::printf("    ratio %.3f (a hit that asked the remote would take >= 1000 ms)\n", with_ms / without_ms);
  servers.stop();  // before their directory goes: the script finds them by the pid files in it
  boost::system::error_code ignored;
  fs::remove_all(work, ignored);
  return 0;
}

// Errors end the run through bench_main's scope, so that the servers it started are stopped.
int main(int argc, char **argv) {
  try {
    return bench_main(argc, argv);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "kiln_bench_remote: %s\n", error.what());
    return 1;
  }
}
