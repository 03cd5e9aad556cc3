// The Redis backend (backend.hpp), on hiredis' blocking API with its read and write loop done
// here rather than in redisCommand: so that every request has one deadline (the socket
// timeouts hiredis sets bound each read, not a whole reply), a reply is refused once its
// unparsed bytes pass max_bytes (hiredis itself would buffer any size a server sends), a parsed
// reply is only what its command can answer (redis_reply_limits.hpp: types, one value, max_bytes
// of text, nothing after it), and a write to a connection the server closed cannot raise
// SIGPIPE in the host process.
//
// A connection is opened on first use and kept. When a call finds it broken (the server closed
// it: a restart, an idle timeout), the call reconnects once and asks again; a timeout, a
// refused connection or a reply that is not Redis' protocol is a RemoteError at once, and the
// connection is dropped (a late reply must not answer the next request).
#include "remote/backend.hpp"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <strings.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/errors.hpp>

#include "remote/backends/redis_reply_limits.hpp"

namespace kiln::remote {
namespace {

using RedisClock = std::chrono::steady_clock;

struct RedisContextFree {
  void operator()(redisContext *context) const { redisFree(context); }
};
struct RedisReplyFree {
  void operator()(redisReply *reply) const { freeReplyObject(reply); }
};
using RedisContextPtr = std::unique_ptr<redisContext, RedisContextFree>;
using RedisReplyPtr = std::unique_ptr<redisReply, RedisReplyFree>;

// Lease scripts: change the key only while it still holds the caller's holder value.
constexpr const char *kRedisRenewScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
constexpr const char *kRedisReleaseScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
// replace: set the key only while it still holds the value the caller read (a compare-and-swap).
constexpr const char *kRedisReplaceScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0";

const std::string kRedisExpected = ": use redis://[:password@]host[:port][/db] (e.g. redis://cache.local:6379/0)";

std::string redis_percent_decode(const std::string &text, const std::string &url) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int high = i + 2 < text.size() ? hex(text[i + 1]) : -1;
    const int low = i + 2 < text.size() ? hex(text[i + 2]) : -1;
    if (high < 0 || low < 0) {
      throw UsageError("remote cache URL \"" + redacted_url(url) + "\" has a bad %-escape in its credentials" +
                       kRedisExpected);
    }
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

bool redis_digits(const std::string &text) {
  return !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
}

struct RedisUrl {
  std::string host;
  int port = 6379;
  long db = 0;
  std::optional<std::string> user;  // Redis 6 ACL user (redis://user:password@...)
  std::optional<std::string> password;
  std::string display;  // redis://host:port/db, no password
};

RedisUrl redis_parse_url(const std::string &url) {
  const auto bad = [&url](const std::string &why) {
    return UsageError("remote cache URL \"" + redacted_url(url) + "\" " + why + kRedisExpected);
  };
  const std::string scheme = "redis://";
  if (url.size() < scheme.size() || strncasecmp(url.c_str(), scheme.c_str(), scheme.size()) != 0) {
    throw bad("is not a redis:// URL");
  }
  std::string rest = url.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string::npos) throw bad("has a query or fragment, which kiln does not read");
  const auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? "" : rest.substr(slash + 1);
  RedisUrl out;
  const auto at = authority.rfind('@');
  if (at != std::string::npos) {
    const std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const auto colon = userinfo.find(':');
    if (colon == std::string::npos) throw bad("has credentials without a ':' (the password goes after one)");
    if (colon > 0) out.user = redis_percent_decode(userinfo.substr(0, colon), url);
    out.password = redis_percent_decode(userinfo.substr(colon + 1), url);
  }
  std::string port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]
    const auto close = authority.find(']');
    if (close == std::string::npos) throw bad("has an unclosed '[' in its host");
    out.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') throw bad("has text after its [host]");
    if (!after.empty()) port = after.substr(1);
    if (!after.empty() && port.empty()) throw bad("has an empty port");
  } else {
    const auto colon = authority.find(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) throw bad("has an empty port");
    }
  }
  if (out.host.empty()) throw bad("has no host");
  if (!port.empty()) {
    if (!redis_digits(port) || std::stol(port) < 1 || std::stol(port) > 65535) {
      throw bad("has a port other than 1-65535");
    }
    out.port = static_cast<int>(std::stol(port));
  }
  std::string db = path;
  while (!db.empty() && db.back() == '/') db.pop_back();
  if (!db.empty()) {
    if (!redis_digits(db)) throw bad("has a database other than a number (e.g. /0)");
    out.db = std::stol(db);
  }
  const bool v6 = out.host.find(':') != std::string::npos;
  out.display = "redis://" + (v6 ? "[" + out.host + "]" : out.host) + ":" + std::to_string(out.port) + "/" +
                std::to_string(out.db);
  return out;
}

timeval redis_timeval(double seconds) {
  // At least 1 ms: a zero socket timeout means "wait forever".
  const long long micros = std::max(1000LL, static_cast<long long>(std::llround(seconds * 1e6)));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(micros / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(micros % 1000000);
  return tv;
}

std::string redis_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

// hiredis writes with write(2): to a socket its peer closed, that raises SIGPIPE, which kills a
// process that did not ignore it. Blocked for this thread while writing, and a SIGPIPE this
// thread caused meanwhile is taken back before unblocking.
class RedisSigpipeGuard {
 public:
  RedisSigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~RedisSigpipeGuard() {
    if (!blocked_) return;
    const int saved = errno;
    sigset_t pending;
    sigemptyset(&pending);
    if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved;
  }
  RedisSigpipeGuard(const RedisSigpipeGuard &) = delete;
  RedisSigpipeGuard &operator=(const RedisSigpipeGuard &) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
  bool blocked_ = false;
};

std::string redis_reply_kind(const redisReply &reply) {
  switch (reply.type) {
    case REDIS_REPLY_STRING: return "a string";
    case REDIS_REPLY_ARRAY: return "an array";
    case REDIS_REPLY_INTEGER: return "an integer";
    case REDIS_REPLY_NIL: return "nil";
    case REDIS_REPLY_STATUS: return "the status " + std::string(reply.str, reply.len);
    case REDIS_REPLY_ERROR: return "the error " + std::string(reply.str, reply.len);
    default: return "a reply of type " + std::to_string(reply.type);
  }
}

class RedisBackend final : public Backend {
 public:
  explicit RedisBackend(const Endpoint &endpoint)
      : Backend(endpoint), url_(redis_parse_url(endpoint.url)), prefix_(endpoint.attribute("prefix", "kiln:")) {
    if (!(endpoint_.connect_timeout_s > 0) || !(endpoint_.timeout_s > 0)) {
      throw UsageError("remote cache " + url_.display + ": the timeouts must be more than 0 seconds");
    }
  }

  std::string display_url() const override { return url_.display; }

  std::optional<std::string> get(const std::string &key) override {
    validate_key(key);
    const std::string name = prefix_ + key;
    const RedisReplyPtr reply = command("GET", {"GET", name}, value_reply());
    if (reply->type == REDIS_REPLY_NIL) return std::nullopt;
    if (reply->type != REDIS_REPLY_STRING) unexpected("GET", name, *reply, "a string or nil");
    if (reply->len > endpoint_.max_bytes) too_large("GET", name);
    return std::string(reply->str, reply->len);
  }

  // A bulk reply is buffered whole by hiredis (twice, while it is parsed): the value is read
  // in GETRANGE pieces instead, so a cas/ entry of any size costs one piece of memory. Values
  // are written once (SET NX) and never changed; one that vanishes or changes length while it
  // is read is a RemoteError (a mix of two values would fail the bundle's hashes anyway).
  bool get_to(const std::string &key, const Sink &sink) override {
    validate_key(key);
    const std::string name = prefix_ + key;
    const RedisReplyPtr length = command("STRLEN", {"STRLEN", name}, answer(kInteger));
    if (length->type != REDIS_REPLY_INTEGER || length->integer < 0) unexpected("STRLEN", name, *length, "a length");
    const auto size = static_cast<std::uint64_t>(length->integer);
    if (size > endpoint_.max_bytes) too_large("GET", name);
    if (size == 0) {  // no value, or an empty one: GET tells which
      const auto whole = get(key);
      if (!whole) return false;
      sink(whole->data(), whole->size());
      return true;
    }
    constexpr std::uint64_t kPiece = 4ull << 20;
    for (std::uint64_t start = 0; start < size; start += kPiece) {
      const std::uint64_t end = std::min(size, start + kPiece);
      const RedisReplyPtr piece =
          command("GETRANGE", {"GETRANGE", name, std::to_string(start), std::to_string(end - 1)},
                  {RedisReplyLimits::of(REDIS_REPLY_STRING), end - start, 1});
      if (piece->type != REDIS_REPLY_STRING) unexpected("GETRANGE", name, *piece, "a string");
      if (piece->len != end - start) {
        throw RemoteError(where("GETRANGE", name) + ": the value changed or vanished while it was read (" +
                          std::to_string(piece->len) + " bytes at offset " + std::to_string(start) + ", " +
                          std::to_string(end - start) + " expected)");
      }
      sink(piece->str, piece->len);
    }
    return true;
  }

  bool put_new(const std::string &key, const std::string &value) override {
    validate_key(key);
    const std::string name = prefix_ + key;
    refuse_too_large("SET", name, value);
    // After a reconnect, nil may be this very value, written before the connection broke: the
    // caller then sees "a value was there", which is true.
    const RedisReplyPtr reply = command("SET", {"SET", name, value, "NX"}, answer(kStatus | kNil));
    if (is_ok(*reply)) return true;
    if (reply->type == REDIS_REPLY_NIL) return false;
    unexpected("SET", name, *reply, "OK or nil");
  }

  bool replace(const std::string &key, const std::string &expected, const std::string &value) override {
    validate_key(key);
    const std::string name = prefix_ + key;
    refuse_too_large("EVAL (replace)", name, value);
    refuse_too_large("EVAL (replace)", name, expected);
    // Asked twice after a reconnect, a script the first request ran answers 0 (the key holds
    // `value` now, not `expected`): the caller sees "changed meanwhile", and reads it again.
    const RedisReplyPtr reply =
        command("EVAL", {"EVAL", kRedisReplaceScript, "1", name, expected, value}, answer(kInteger));
    if (reply->type != REDIS_REPLY_INTEGER) unexpected("EVAL (replace)", name, *reply, "an integer");
    return reply->integer == 1;
  }

  std::string ping() override {
    const RedisReplyPtr reply = command("PING", {"PING"}, answer(kStatus));
    if (reply->type == REDIS_REPLY_STATUS && std::string(reply->str, reply->len) == "PONG") return "PONG";
    unexpected("PING", "", *reply, "PONG");
  }

  bool acquire_lease(const std::string &key, const std::string &holder, double ttl_s) override {
    validate_key(key);
    const std::string name = prefix_ + key;
    const RedisReplyPtr reply = command("SET", {"SET", name, holder, "NX", "PX", ttl_ms(ttl_s)}, answer(kStatus | kNil));
    if (is_ok(*reply)) return true;
    if (reply->type != REDIS_REPLY_NIL) unexpected("SET", name, *reply, "OK or nil");
    // Asked twice (a reconnect): the first SET may have taken it before its reply was lost.
    if (retried_) return current_lease(key) == holder;
    return false;
  }

  // Does nothing when `holder` no longer holds the lease (the script answers 0).
  void renew_lease(const std::string &key, const std::string &holder, double ttl_s) override {
    validate_key(key);
    const std::string name = prefix_ + key;
    const RedisReplyPtr reply =
        command("EVAL", {"EVAL", kRedisRenewScript, "1", name, holder, ttl_ms(ttl_s)}, answer(kInteger));
    if (reply->type != REDIS_REPLY_INTEGER) unexpected("EVAL (renew)", name, *reply, "an integer");
  }

  void release_lease(const std::string &key, const std::string &holder) override {
    validate_key(key);
    const std::string name = prefix_ + key;
    const RedisReplyPtr reply = command("EVAL", {"EVAL", kRedisReleaseScript, "1", name, holder}, answer(kInteger));
    if (reply->type != REDIS_REPLY_INTEGER) unexpected("EVAL (release)", name, *reply, "an integer");
  }

  std::optional<std::string> current_lease(const std::string &key) override { return get(key); }

  void break_lease(const std::string &key) override {
    validate_key(key);
    const std::string name = prefix_ + key;
    const RedisReplyPtr reply = command("DEL", {"DEL", name}, answer(kInteger));
    if (reply->type != REDIS_REPLY_INTEGER) unexpected("DEL", name, *reply, "an integer");
  }

 private:
  // Why an exchange failed; the connection is gone after any of them.
  enum class Failure { none, lost, timed_out, other };

  std::string where(const std::string &command, const std::string &name) const {
    return "remote cache " + url_.display + ": " + command + (name.empty() ? "" : " " + name);
  }

  static bool is_ok(const redisReply &reply) {
    return reply.type == REDIS_REPLY_STATUS && std::string(reply.str, reply.len) == "OK";
  }

  [[noreturn]] void unexpected(const std::string &command, const std::string &name, const redisReply &reply,
                               const char *expected) const {
    throw RemoteError(where(command, name) + ": the server answered " + redis_reply_kind(reply) + ", not " + expected +
                      " (is this a Redis server?)");
  }

  void refuse_too_large(const std::string &command, const std::string &name, const std::string &value) const {
    if (value.size() > endpoint_.max_bytes) {
      throw RemoteError(where(command, name) + ": the value is " + std::to_string(value.size()) +
                        " bytes, more than the endpoint's max_bytes (" + std::to_string(endpoint_.max_bytes) +
                        "): not sent (raise max_bytes to store it)");
    }
  }

  [[noreturn]] void too_large(const std::string &command, const std::string &name) const {
    throw RemoteError(where(command, name) + ": the value is larger than the endpoint's max_bytes (" +
                      std::to_string(endpoint_.max_bytes) + "): not read (raise max_bytes to accept it)");
  }

  std::string ttl_ms(double ttl_s) const {
    if (!(ttl_s > 0) || ttl_s > 1e9) {
      throw UsageError("remote cache " + url_.display + ": a lease's ttl must be more than 0 seconds (got " +
                       redis_seconds(ttl_s) + ")");
    }
    return std::to_string(std::max(1LL, static_cast<long long>(std::llround(ttl_s * 1000))));
  }

  // One command, connecting first when there is no connection, and once more on a fresh
  // connection when a kept one turns out broken. Never null; error replies are thrown.
  RedisReplyPtr command(const char *label, std::initializer_list<std::string_view> args, const RedisReplyLimits &limits) {
    retried_ = false;
    const std::string name = args.size() > 1 ? std::string(*(args.begin() + 1)) : std::string();
    bool fresh = false;
    if (!context_) {
      connect();
      fresh = true;
    }
    RedisReplyPtr reply = exchange(args, limits);
    if (!reply && failure_ == Failure::lost && !fresh) {
      retried_ = true;
      connect();
      reply = exchange(args, limits);
    }
    if (!reply) throw RemoteError(where(label, name) + ": " + failure_text_);
    if (reply->type == REDIS_REPLY_ERROR) {
      const std::string error(reply->str, reply->len);
      std::string hint;
      if (error.rfind("NOAUTH", 0) == 0) hint = " (put the password in the URL: redis://:password@host:port/db)";
      if (error.rfind("OOM", 0) == 0) hint = " (the server is at its maxmemory: raise it or set an eviction policy)";
      throw RemoteError(where(label, name) + ": the server answered the error \"" + error + "\"" + hint);
    }
    return reply;
  }

  void connect() {
    context_.reset();
    redisContext *raw =
        redisConnectWithTimeout(url_.host.c_str(), url_.port, redis_timeval(endpoint_.connect_timeout_s));
    if (raw == nullptr) throw std::bad_alloc();
    RedisContextPtr context(raw);
    if (context->err != 0) {
      if (context->err == REDIS_ERR_OOM) throw std::bad_alloc();
      throw RemoteError("remote cache " + url_.display + ": cannot connect (connect timeout " +
                        redis_seconds(endpoint_.connect_timeout_s) + "): " + context->errstr +
                        " (is redis-server running there, on that port?)");
    }
    context_ = std::move(context);
    guard_.install(context_->reader);
    if (url_.password) {
      RedisReplyPtr reply =
          url_.user ? exchange({"AUTH", *url_.user, *url_.password}, answer(kStatus))
                    : exchange({"AUTH", *url_.password}, answer(kStatus));
      if (!reply) throw RemoteError("remote cache " + url_.display + ": AUTH: " + failure_text_);
      if (!is_ok(*reply)) {
        context_.reset();
        throw RemoteError("remote cache " + url_.display + ": AUTH was refused (" + redis_reply_kind(*reply) +
                          "): check the password in the URL");
      }
    }
    if (url_.db != 0) {
      RedisReplyPtr reply = exchange({"SELECT", std::to_string(url_.db)}, answer(kStatus));
      if (!reply) throw RemoteError("remote cache " + url_.display + ": SELECT: " + failure_text_);
      if (!is_ok(*reply)) {
        context_.reset();
        throw RemoteError("remote cache " + url_.display + ": SELECT " + std::to_string(url_.db) + " was refused (" +
                          redis_reply_kind(*reply) +
                          "): use a database number the server has (databases in redis.conf)");
      }
    }
  }

  // Sets the socket timeouts to what is left until `deadline`; false when nothing is left.
  bool time_left(RedisClock::time_point deadline) {
    const auto left = std::chrono::duration<double>(deadline - RedisClock::now()).count();
    if (left <= 0) return false;
    redisSetTimeout(context_.get(), redis_timeval(left));
    return true;
  }

  // Drops the connection and says why: nullptr for the caller to return.
  RedisReplyPtr fail(Failure failure, const std::string &text) {
    failure_ = failure;
    failure_text_ = text;
    context_.reset();
    return nullptr;
  }

  RedisReplyPtr fail_io(int error_number) {
    redisContext *c = context_.get();
    if (c->err == REDIS_ERR_OOM) throw std::bad_alloc();
    if (c->err == REDIS_ERR_EOF) {
      return fail(Failure::lost, std::string(c->errstr) + " (the server closed the connection)");
    }
    if (c->err == REDIS_ERR_IO &&
        (error_number == EAGAIN || error_number == EWOULDBLOCK || error_number == ETIMEDOUT)) {
      return timed_out();
    }
    if (c->err == REDIS_ERR_IO && (error_number == EPIPE || error_number == ECONNRESET || error_number == ENOTCONN)) {
      return fail(Failure::lost, c->errstr);
    }
    if (c->err == REDIS_ERR_PROTOCOL) {
      return fail(Failure::other,
                  std::string("the reply is not Redis' protocol: ") + c->errstr + " (is this a Redis server?)");
    }
    return fail(Failure::other, c->errstr);
  }

  // The reader stopped: the guard refused the reply (redis_reply_limits.hpp), or hiredis failed.
  RedisReplyPtr parse_failed() {
    if (!guard_.refusal().empty()) return fail(Failure::other, guard_.refusal());
    return fail_io(errno);
  }

  RedisReplyPtr timed_out() {
    return fail(Failure::timed_out, "no answer within the endpoint's timeout (" + redis_seconds(endpoint_.timeout_s) +
                                        "; is the server overloaded, or is this an address that never answers?)");
  }

  // One request and its reply on the open connection, within the endpoint's timeout.
  RedisReplyPtr exchange(std::initializer_list<std::string_view> args, const RedisReplyLimits &limits) {
    failure_ = Failure::none;
    guard_.expect(limits);
    const auto deadline = RedisClock::now() + std::chrono::duration_cast<RedisClock::duration>(
                                                  std::chrono::duration<double>(endpoint_.timeout_s));
    std::vector<const char *> argv;
    std::vector<size_t> lengths;
    for (const auto &arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    redisContext *c = context_.get();
    if (redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK) {
      if (c->err == REDIS_ERR_OOM || c->err == 0) throw std::bad_alloc();
      return fail(Failure::other, c->errstr);
    }
    {
      RedisSigpipeGuard guard;
      int done = 0;
      while (done == 0) {
        if (!time_left(deadline)) return timed_out();
        if (redisBufferWrite(c, &done) != REDIS_OK) return fail_io(errno);
      }
    }
    // Past this many unparsed bytes the reply is refused: a bulk string stays unparsed until
    // all of it arrived.
    const std::uint64_t slack = 64 * 1024;
    const std::uint64_t limit = limits.max_bytes > UINT64_MAX - slack ? UINT64_MAX : limits.max_bytes + slack;
    void *reply = nullptr;
    if (redisGetReplyFromReader(c, &reply) != REDIS_OK) return parse_failed();
    while (reply == nullptr) {
      if (!time_left(deadline)) return timed_out();
      if (redisBufferRead(c) != REDIS_OK) return fail_io(errno);
      if (c->reader->len - c->reader->pos > limit) {
        return fail(Failure::other, "the reply is larger than this command's bound (" +
                                        std::to_string(limits.max_bytes) +
                                        " bytes; for a value, the endpoint's max_bytes): not read (raise max_bytes "
                                        "to accept a larger value)");
      }
      if (redisGetReplyFromReader(c, &reply) != REDIS_OK) return parse_failed();
    }
    RedisReplyPtr got(static_cast<redisReply *>(reply));
    if (c->reader->len > c->reader->pos) {
      // One request, one reply: bytes beyond it would answer the next request.
      return fail(Failure::other, "the server sent more than the one reply asked for (is this a Redis server?)");
    }
    return got;
  }

  // What each command can answer. A value (GET) is at most max_bytes; other replies are short.
  static constexpr unsigned kStatus = RedisReplyLimits::of(REDIS_REPLY_STATUS);
  static constexpr unsigned kNil = RedisReplyLimits::of(REDIS_REPLY_NIL);
  static constexpr unsigned kInteger = RedisReplyLimits::of(REDIS_REPLY_INTEGER);
  static constexpr std::uint64_t kShortReplyBytes = 64 * 1024;
  RedisReplyLimits value_reply() const {
    return {RedisReplyLimits::of(REDIS_REPLY_STRING) | kNil, endpoint_.max_bytes, 1};
  }
  static RedisReplyLimits answer(unsigned types) { return {types, kShortReplyBytes, 1}; }

  RedisUrl url_;
  const std::string prefix_;  // before every key ("prefix" attribute; "kiln:" by default)
  RedisReplyGuard guard_;  // before context_: the reader it is installed in goes first
  RedisContextPtr context_;
  Failure failure_ = Failure::none;
  std::string failure_text_;
  bool retried_ = false;  // the last command() asked twice (see acquire_lease)
};

}  // namespace

std::unique_ptr<Backend> make_redis_backend(const Endpoint &endpoint) {
  return std::make_unique<RedisBackend>(endpoint);
}

}  // namespace kiln::remote
