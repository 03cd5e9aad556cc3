// One remote cache server, as ccache's storage/remote/: a small interface, one file
// per kind of server, in their own module (backends/, backend_module.hpp) -- (http_backend.cpp: GET/HEAD/PUT/MKCOL/DELETE against nginx's WebDAV module
// or any server with those verbs; redis_backend.cpp: hiredis). The flow that decides what to ask
// and what to trust lives above it (remote/cache.hpp): a backend only moves bytes
// and says truthfully whether it has a key.
//
// Keys are relative names such as "cas/<consumer>/<content key>", "ac/<consumer>/<input key>" and
// "lease/<consumer>/<input key>" ([A-Za-z0-9._/-], no empty or dot part); a backend maps them
// to its own namespace (a URL under its prefix, a Redis key with its prefix).
//
// Every call is bounded by the endpoint's timeouts and throws RemoteError on anything but a
// clear answer: connection refused, timeout, a 5xx, a body larger than max_bytes, a reply that
// is not what the protocol says. The caller turns that into "skip this remote for a while";
// it is never an error that reaches a build or a load.
//
// Threads: one backend object is used by one thread at a time (the caller serializes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "remote/schemes.hpp"

namespace kiln::remote {

// A remote could not give a clear answer (the message names the URL and what went wrong).
struct RemoteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Endpoint {
  std::string url;                  // http://host:port/prefix, https://..., redis://[:password@]host:port[/db]
  bool read_only = true;            // never written (no PUT/SET, no lease): see load_config
  // What the spec says: ";read-only", ";read-write", or neither (then load_config decides:
  // written only by a machine that signs its uploads).
  enum class Writes { unsaid, never, always } writes = Writes::unsaid;
  double connect_timeout_s = 0.5;   // to establish the connection
  double timeout_s = 10;            // for one whole request, transfer included
  std::uint64_t max_bytes = 256ull << 20;  // a larger value is refused on put and on get (RemoteError)
  // The scheme's own attributes (remote/schemes.hpp), as written after the URL: Redis's
  // "prefix", for one. A backend reads its own with attribute().
  std::map<std::string, std::string> attributes;

  const std::string &attribute(const std::string &key, const std::string &fallback) const {
    const auto it = attributes.find(key);
    return it == attributes.end() ? fallback : it->second;
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  const Endpoint &endpoint() const { return endpoint_; }
  // The URL without credentials, for messages and `kiln remote status`.
  virtual std::string display_url() const = 0;
  // Whether the lease calls below are atomic on this server (remote/schemes.hpp); a cache
  // asks a backend without leases for none.
  bool offers_leases() const {
    const Scheme *scheme = find_scheme(endpoint_.url);
    return scheme != nullptr && scheme->leases;
  }

  // The value at `key`; nullopt when the server clearly does not have it (HTTP 404, Redis nil).
  // For small values (pointers, lease holders): the whole value is held in memory.
  virtual std::optional<std::string> get(const std::string &key) = 0;
  // The same value handed to `sink` piece by piece as it arrives, never held whole (a cas/
  // entry may be max_bytes large): false when the server clearly does not have it. Pieces are
  // at most a few MiB. What `sink` throws (a full disk) stops the transfer and reaches the
  // caller as it was thrown; on a RemoteError the sink may have received part of the value.
  using Sink = std::function<void(const char *data, std::size_t size)>;
  virtual bool get_to(const std::string &key, const Sink &sink) = 0;
  // Stores `value` at `key` unless the key already holds a value: true when this call wrote
  // it, false when a value was there (left as it was; the caller compares if it cares).
  // Redis: SET NX. HTTP: HEAD, then PUT with If-None-Match: * when absent (412: present; a
  // server that ignores the header, as nginx's dav module does, lets a race between two
  // writers overwrite: harmless, the caller only writes content-addressed values, or pointers
  // it re-checks).
  virtual bool put_new(const std::string &key, const std::string &value) = 0;
  // Replaces the value at `key` with `value` only while the key still holds exactly `expected`
  // (a compare-and-swap): true when this call replaced it; false when the key holds anything
  // else by then, or nothing (another writer's value is left as it is). Redis: one Lua script
  // that compares and sets. HTTP: GET (the value and its ETag), compared, then PUT with
  // If-Match: <ETag> (412: changed since); nginx's dav module ignores If-Match, and then only
  // a writer between the GET and the PUT can be overwritten -- the caller replaces only what
  // it refuses, with what it accepts (remote/cache.hpp, offer).
  virtual bool replace(const std::string &key, const std::string &expected, const std::string &value) = 0;
  // A round trip that proves the server answers (HTTP: HEAD of the prefix, any status below
  // 500; Redis: PING); returns a short description ("HTTP 404", "PONG").
  virtual std::string ping() = 0;

  // ---- Build leases: at most one holder of `key` across every machine sharing this server, so
  // that machines missing the same artifact compile it once. `holder` identifies the holder
  // (host, pid, random); `ttl_s` bounds how long a holder that died keeps it.
  // Redis: SET key holder NX PX ttl; renew: PEXPIRE if the value is still holder (a Lua script);
  // release: DEL if still holder (a Lua script); current: GET.
  // HTTP: MKCOL lease/<..>/ (201: ours; 405: taken -- mkdir is atomic on nginx), then PUT
  // lease/<..>/holder with "holder <renewal count>"; renew: PUT the holder file again with the
  // count increased; release: DELETE lease/<..>/; current: GET lease/<..>/holder (the text,
  // "" when the collection exists without it, nullopt when there is no lease). HTTP cannot
  // expire a dead holder's lease by itself: the caller takes over a lease whose current()
  // text did not change for ttl_s by its own clock (break_lease, then acquire again).

  // True when this call took the lease.
  virtual bool acquire_lease(const std::string &key, const std::string &holder, double ttl_s) = 0;
  // Renew and release do nothing when `holder` does not hold the lease (any more): whether it
  // still does is current_lease's answer.
  virtual void renew_lease(const std::string &key, const std::string &holder, double ttl_s) = 0;
  virtual void release_lease(const std::string &key, const std::string &holder) = 0;
  virtual std::optional<std::string> current_lease(const std::string &key) = 0;
  // Removes the lease whoever holds it (a holder that stopped renewing).
  virtual void break_lease(const std::string &key) = 0;

 protected:
  explicit Backend(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}
  Endpoint endpoint_;
};

// Inside the backends' module (backends/, remote/backend_module.hpp): UsageError
// (kiln/errors.hpp) for a URL the backend cannot use, naming it and the form expected.
std::unique_ptr<Backend> make_http_backend(const Endpoint &endpoint);
std::unique_ptr<Backend> make_redis_backend(const Endpoint &endpoint);
// In libkiln: by the URL's scheme (remote/schemes.hpp) through the module, loaded on first use;
// UsageError for any other scheme, or when the module is missing (naming where it looked).
std::unique_ptr<Backend> make_backend(const Endpoint &endpoint);

// The key rule above, shared by every backend (each call validates its key before any request):
// 1-400 characters of [A-Za-z0-9._/-], no empty, "." or ".." part. UsageError naming the key.
void validate_key(const std::string &key);
// `url` for a message before it is parsed: credentials ("user:password@") replaced by "***@".
std::string redacted_url(const std::string &url);

}  // namespace kiln::remote
