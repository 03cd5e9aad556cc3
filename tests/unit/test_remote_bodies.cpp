// A remote's answer costs memory by the piece, never by its size: an entry's body goes to the
// transfer file as it arrives (HTTP chunked or not, Redis in GETRANGE pieces), bounded by the
// remote's max-size. Measured as the peak resident set (VmHWM, reset through clear_refs) while
// one fetch of a large body runs. The servers are in-process fakes (support/fake_remotes.hpp):
// the cases run everywhere.
#include <doctest/doctest.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include "remote/cache.hpp"
#include "store/storage.hpp"
#include "support/fake_remotes.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"

namespace remote = kiln::remote;
using kiln::test::FakeRedis;
using kiln::test::LoopbackServer;
using kiln::test::skip_if;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

constexpr char kContentKey[] = "0123456789abcdef0123456789abcdef";

// kB of a /proc/self/status line ("VmHWM:", "VmRSS:").
std::uint64_t status_kib(const std::string &field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, field.size(), field) == 0) return std::stoull(line.substr(field.size()));
  }
  FAIL("/proc/self/status has no " << field);
  return 0;
}

// Resets VmHWM to the current resident set (clear_refs "5", Linux 4.0).
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

std::optional<std::string> no_peak_rss_reset() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return std::string("a sanitizer's shadow memory makes resident-set figures meaningless");
#else
  if (!reset_peak_rss()) return std::string("/proc/self/clear_refs cannot be written here, so a peak RSS cannot be measured");
  return std::nullopt;
#endif
}

bool send_all(int fd, const std::string &bytes) {
  for (std::size_t at = 0; at < bytes.size();) {
    const ssize_t wrote = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (wrote <= 0) return false;
    at += static_cast<std::size_t>(wrote);
  }
  return true;
}

// An HTTP server answering every request with `bytes` bytes of 'x' in 1 MiB chunks
// (Transfer-Encoding: chunked: no Content-Length tells the client the size first).
class ChunkedServer {
 public:
  explicit ChunkedServer(std::uint64_t bytes)
      : sent_(std::make_shared<std::atomic<std::uint64_t>>(0)), server_([bytes, sent = sent_](int fd) {
          std::string request;
          char buffer[4096];
          while (request.find("\r\n\r\n") == std::string::npos) {
            const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
            if (got <= 0) return;
            request.append(buffer, static_cast<std::size_t>(got));
          }
          if (!send_all(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")) return;
          const std::string chunk(1u << 20, 'x');
          char size_line[32];
          for (std::uint64_t left = bytes; left > 0;) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
            std::snprintf(size_line, sizeof size_line, "%zx\r\n", n);
            if (!send_all(fd, size_line) || !send_all(fd, chunk.substr(0, n) + "\r\n")) return;
            left -= n;
            *sent += n;
          }
          send_all(fd, "0\r\n\r\n");
        }) {}

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/kiln"; }
  std::uint64_t sent() const { return *sent_; }

 private:
  std::shared_ptr<std::atomic<std::uint64_t>> sent_;
  LoopbackServer server_;
};

// A Redis holding one value of `size` bytes of 'x' under every key: STRLEN, GETRANGE and GET
// answer as a Redis would. After `shrink_after` GETRANGEs the value is gone (0 bytes).
FakeRedis redis_holding(std::uint64_t size, int shrink_after = -1) {
  auto ranges = std::make_shared<std::atomic<int>>(0);
  return FakeRedis(
      [size, shrink_after, ranges](const std::vector<std::string> &command) -> std::string {
        const auto bulk = [](std::uint64_t n) { return "$" + std::to_string(n) + "\r\n" + std::string(n, 'x') + "\r\n"; };
        if (command[0] == "STRLEN") return ":" + std::to_string(size) + "\r\n";
        if (command[0] == "GET") return bulk(size);
        if (command[0] == "GETRANGE" && command.size() == 4) {
          if (shrink_after >= 0 && ++*ranges > shrink_after) return "$0\r\n\r\n";
          const std::uint64_t start = std::stoull(command[2]);
          const std::uint64_t end = std::min<std::uint64_t>(size - 1, std::stoull(command[3]));
          return bulk(start > end ? 0 : end - start + 1);
        }
        return "-ERR unknown command\r\n";
      },
      std::chrono::seconds(120));
}

struct Fetch {
  bool hit = false;
  std::uint64_t peak_growth_kib = 0;
  std::vector<std::string> logged;
};

// One fetch of kContentKey from `spec` into a fresh cache in `dir`.
Fetch fetch(const std::string &spec, const fs::path &dir) {
  const kiln::store::Storage storage({kiln::store::StoreLocation{dir / "cache", true, "test"}});
  remote::RemoteConfig config;
  config.remotes.push_back(remote::parse_remote(spec, "test"));
  config.accept_unsigned = true;  // else no remote is asked: nothing would vouch for what it serves
  Fetch out;
  const remote::RemoteCache cache(config, [&out](kiln::LogLevel, const std::string &line) { out.logged.push_back(line); });
  reset_peak_rss();
  const std::uint64_t before_kib = status_kib("VmRSS:");
  out.hit = cache.find_by_content_key(storage, "tests", kContentKey).has_value();
  // The high-water mark is taken lazily: it can read below an RSS sampled earlier that fell since
  // (another thread freeing). Growth is never negative.
  const std::uint64_t peak_kib = status_kib("VmHWM:");
  out.peak_growth_kib = peak_kib > before_kib ? peak_kib - before_kib : 0;
  return out;
}

bool has_staging(const fs::path &root) {
  boost::system::error_code error;
  for (fs::recursive_directory_iterator it(root, error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().find(".staging-") != std::string::npos) return true;
  }
  return false;
}

constexpr std::uint64_t kBody = 200ull << 20;
constexpr std::uint64_t kBoundKib = 64 * 1024;  // a few pieces and buffers, nowhere near the body

}  // namespace

TEST_SUITE("remote bodies") {

TEST_CASE("remote bodies: a 200 MiB chunked HTTP body is fetched with a bounded resident set" *
          skip_if(no_peak_rss_reset)) {
  ChunkedServer server(kBody);
  TempDir dir;
  const Fetch result = fetch(server.url() + ";timeout=60;max-size=512M", dir.path());
  CHECK_FALSE(result.hit);  // not a bundle: a miss, after the whole body arrived
  CHECK(server.sent() == kBody);
  MESSAGE("peak RSS growth while fetching a " << (kBody >> 20) << " MiB chunked body: " << result.peak_growth_kib / 1024 << " MiB");
  CHECK(result.peak_growth_kib < kBoundKib);
  REQUIRE_FALSE(result.logged.empty());
  CHECK_MESSAGE(result.logged.back().find("is not a kiln bundle") != std::string::npos, result.logged.back());
  CHECK_FALSE(has_staging(dir.path() / "cache"));
}

TEST_CASE("remote bodies: a chunked body past max-size is cut off there, and its partial file is removed") {
  ChunkedServer server(32ull << 20);
  TempDir dir;
  const Fetch result = fetch(server.url() + ";timeout=60;max-size=4M", dir.path());
  CHECK_FALSE(result.hit);
  REQUIRE_FALSE(result.logged.empty());
  CHECK_MESSAGE(result.logged.back().find("larger than the endpoint's max_bytes") != std::string::npos, result.logged.back());
  CHECK(server.sent() < (32ull << 20));
  CHECK_FALSE(has_staging(dir.path() / "cache"));
}

TEST_CASE("remote bodies: a 200 MiB Redis value is read in pieces, with a bounded resident set" *
          skip_if(no_peak_rss_reset)) {
  FakeRedis redis = redis_holding(kBody);
  TempDir dir;
  const Fetch result = fetch(redis.url() + ";timeout=60;max-size=512M", dir.path());
  CHECK_FALSE(result.hit);
  MESSAGE("peak RSS growth while fetching a " << (kBody >> 20) << " MiB Redis value: " << result.peak_growth_kib / 1024 << " MiB");
  CHECK(result.peak_growth_kib < kBoundKib);
  CHECK(redis.log().count_of("GETRANGE") == static_cast<int>(kBody / (4u << 20)));
  CHECK(redis.log().count_of("GET") == 0);
  REQUIRE_FALSE(result.logged.empty());
  CHECK_MESSAGE(result.logged.back().find("is not a kiln bundle") != std::string::npos, result.logged.back());
  CHECK_FALSE(has_staging(dir.path() / "cache"));
}

TEST_CASE("remote bodies: a Redis value that vanishes while it is read is a remote failure, and leaves nothing") {
  FakeRedis redis = redis_holding(16u << 20, /*shrink_after=*/2);
  TempDir dir;
  const Fetch result = fetch(redis.url() + ";timeout=10", dir.path());
  CHECK_FALSE(result.hit);
  REQUIRE_FALSE(result.logged.empty());
  CHECK_MESSAGE(result.logged.back().find("changed or vanished while it was read") != std::string::npos, result.logged.back());
  CHECK_FALSE(has_staging(dir.path() / "cache"));
}

TEST_CASE("remote bodies: a Redis value over max-size is refused by its length, before a piece is read") {
  FakeRedis redis = redis_holding(8u << 20);
  TempDir dir;
  const Fetch result = fetch(redis.url() + ";timeout=10;max-size=1M", dir.path());
  CHECK_FALSE(result.hit);
  REQUIRE_FALSE(result.logged.empty());
  CHECK_MESSAGE(result.logged.back().find("larger than the endpoint's max_bytes") != std::string::npos, result.logged.back());
  CHECK(redis.log().count_of("GETRANGE") == 0);
  CHECK(redis.log().count_of("GET") == 0);
}

}  // TEST_SUITE
