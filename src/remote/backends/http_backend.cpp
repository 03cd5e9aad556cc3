// The HTTP backend (backend.hpp): one libcurl easy handle per backend object, reset before every
// request so that no option of one request leaks into the next while its connection cache (keep
// alive) and DNS cache stay.
//
// A PUT of cas/<consumer>/<key> and a lease's MKCOL of lease/<consumer>/<input key>/ need their
// parent collections to exist: a WebDAV server (RFC 4918) answers 409 otherwise, unless it makes
// them itself as nginx's create_full_put_path does for PUT. On a 409 this backend creates the
// missing parents with MKCOL, top down from the prefix (405, "exists", is fine), then retries
// once: the cost is paid once per consumer, not per upload or lease.
#include "remote/backend.hpp"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <kiln/errors.hpp>

namespace kiln::remote {
namespace {

void http_global_init() {
  // curl_global_init is not thread-safe: once per process, whichever thread makes the first backend.
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (result == CURLE_OUT_OF_MEMORY) throw std::bad_alloc();
  if (result != CURLE_OK) {
    throw RemoteError(std::string("remote cache (HTTP): libcurl could not initialise: ") + curl_easy_strerror(result));
  }
}

struct HttpUrlFree {
  void operator()(CURLU *url) const { curl_url_cleanup(url); }
};

std::optional<std::string> http_url_part(CURLU *url, CURLUPart part, unsigned int flags) {
  char *value = nullptr;
  const CURLUcode rc = curl_url_get(url, part, &value, flags);
  if (rc == CURLUE_OUT_OF_MEMORY) throw std::bad_alloc();
  if (rc != CURLUE_OK || value == nullptr) return std::nullopt;
  std::string text(value);
  curl_free(value);
  return text;
}

struct HttpUrl {
  std::string base;  // scheme://host[:port]/prefix without a trailing '/', no credentials
  std::string path;  // "/prefix" ("" for the server's root)
  std::optional<std::string> user, password;
};

HttpUrl http_parse_url(const std::string &url) {
  const std::string expected =
      ": use http://host[:port]/prefix or https://host[:port]/prefix (credentials as http://user:password@host/...)";
  std::unique_ptr<CURLU, HttpUrlFree> parsed(curl_url());
  if (!parsed) throw std::bad_alloc();
  // No default scheme: "host/prefix" is refused rather than guessed.
  const CURLUcode rc = curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0);
  if (rc == CURLUE_OUT_OF_MEMORY) throw std::bad_alloc();
  if (rc != CURLUE_OK) {
    throw UsageError("remote cache URL \"" + redacted_url(url) + "\" is not a valid URL (" + curl_url_strerror(rc) +
                     ")" + expected);
  }
  const auto scheme = http_url_part(parsed.get(), CURLUPART_SCHEME, 0);
  if (!scheme || (*scheme != "http" && *scheme != "https")) {
    throw UsageError("remote cache URL \"" + redacted_url(url) + "\" is not an http or https URL" + expected);
  }
  if (http_url_part(parsed.get(), CURLUPART_QUERY, 0) || http_url_part(parsed.get(), CURLUPART_FRAGMENT, 0)) {
    throw UsageError("remote cache URL \"" + redacted_url(url) +
                     "\" has a query or fragment, which kiln cannot put keys under" + expected);
  }
  HttpUrl out;
  out.user = http_url_part(parsed.get(), CURLUPART_USER, CURLU_URLDECODE);
  out.password = http_url_part(parsed.get(), CURLUPART_PASSWORD, CURLU_URLDECODE);
  // The credentials go to CURLOPT_USERNAME / CURLOPT_PASSWORD, never into a URL that a message shows.
  for (const CURLUPart part : {CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_OPTIONS}) {
    if (curl_url_set(parsed.get(), part, nullptr, 0) == CURLUE_OUT_OF_MEMORY) throw std::bad_alloc();
  }
  auto base = http_url_part(parsed.get(), CURLUPART_URL, 0);
  auto path = http_url_part(parsed.get(), CURLUPART_PATH, 0);
  if (!base || !path) throw UsageError("remote cache URL \"" + redacted_url(url) + "\" has no host" + expected);
  while (!base->empty() && base->back() == '/') base->pop_back();
  while (!path->empty() && path->back() == '/') path->pop_back();
  out.base = *base;
  out.path = *path;
  return out;
}

std::string http_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

long http_milliseconds(double seconds) {
  // 0 would mean "no limit" to libcurl.
  return std::max(1L, static_cast<long>(std::llround(seconds * 1000)));
}

// Collects a response body up to `limit` bytes; past it, the transfer is aborted.
struct HttpSink {
  std::string *body = nullptr;  // nullptr: the body is read and dropped (or streamed)
  // Streamed instead: the body of a 200 answer goes to `stream` as it arrives (any other
  // status's body is an error page, dropped). `curl` tells the status.
  const Backend::Sink *stream = nullptr;
  CURL *curl = nullptr;
  std::exception_ptr stream_failure;  // what `stream` threw, rethrown after the transfer
  std::uint64_t limit = 0;
  std::uint64_t received = 0;
  bool too_large = false;
  bool out_of_memory = false;
};

size_t http_write_body(char *data, size_t size, size_t count, void *user) {
  auto *sink = static_cast<HttpSink *>(user);
  const size_t bytes = size * count;
  sink->received += bytes;
  if (sink->received > sink->limit) {
    sink->too_large = true;
    return 0;  // anything but `bytes` aborts the transfer (CURLE_WRITE_ERROR)
  }
  if (sink->body != nullptr) {
    try {  // no exception may cross libcurl's C frames
      sink->body->append(data, bytes);
    } catch (const std::bad_alloc &) {
      sink->out_of_memory = true;
      return 0;
    }
  }
  long status = 0;
  if (sink->stream != nullptr && curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
      status == 200) {
    try {
      (*sink->stream)(data, bytes);
    } catch (...) {
      sink->stream_failure = std::current_exception();
      return 0;
    }
  }
  return bytes;
}

struct HttpSource {
  const std::string *data = nullptr;
  size_t offset = 0;
};

size_t http_read_body(char *buffer, size_t size, size_t count, void *user) {
  auto *source = static_cast<HttpSource *>(user);
  const size_t bytes = std::min(size * count, source->data->size() - source->offset);
  std::memcpy(buffer, source->data->data() + source->offset, bytes);
  source->offset += bytes;
  return bytes;
}

int http_seek_body(void *user, curl_off_t offset, int origin) {
  auto *source = static_cast<HttpSource *>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<std::uint64_t>(offset) > source->data->size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  source->offset = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// A request's own header lines, freed with it.
struct HttpHeaderList {
  curl_slist *list = nullptr;
  HttpHeaderList() = default;
  HttpHeaderList(const HttpHeaderList &) = delete;
  HttpHeaderList &operator=(const HttpHeaderList &) = delete;
  ~HttpHeaderList() { curl_slist_free_all(list); }
  void append(const std::string &line) {
    curl_slist *longer = curl_slist_append(list, line.c_str());
    if (longer == nullptr) throw std::bad_alloc();
    list = longer;
  }
};

// Keeps the ETag response header's value (a GET's: replace() sends it back in If-Match).
size_t http_read_etag(char *data, size_t size, size_t count, void *user) {
  const size_t bytes = size * count;
  constexpr char kName[] = "etag:";
  if (bytes > sizeof kName - 1 && bytes < 1024 && strncasecmp(data, kName, sizeof kName - 1) == 0) {
    try {  // no exception may cross libcurl's C frames
      const std::string value(data + sizeof kName - 1, bytes - (sizeof kName - 1));
      const auto first = value.find_first_not_of(" \t");
      const auto last = value.find_last_not_of(" \t\r\n");
      *static_cast<std::string *>(user) = first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
    } catch (const std::bad_alloc &) {
      return 0;
    }
  }
  return bytes;
}

// What a status means to whoever reads the message.
std::string http_status_text(long status) {
  std::string text = "HTTP " + std::to_string(status);
  if (status >= 300 && status < 400) {
    return text + " (a redirect, which kiln does not follow: use the URL it points to)";
  }
  if (status == 401 || status == 403) return text + " (check the server's permissions, and the credentials in the URL)";
  if (status == 405 || status == 501) {
    return text + " (the server does not allow this method: enable WebDAV, e.g. nginx's dav_methods PUT DELETE MKCOL)";
  }
  if (status == 413) {
    return text + " (the server refuses a body this large: raise its limit, e.g. nginx's client_max_body_size)";
  }
  if (status >= 500) return text + " (a server error: see the server's log)";
  return text;
}

class HttpBackend final : public Backend {
 public:
  explicit HttpBackend(const Endpoint &endpoint) : Backend(endpoint) {
    if (!(endpoint_.connect_timeout_s > 0) || !(endpoint_.timeout_s > 0)) {
      throw UsageError("remote cache " + redacted_url(endpoint_.url) + ": the timeouts must be more than 0 seconds");
    }
    url_ = http_parse_url(endpoint_.url);
    http_global_init();
    curl_ = curl_easy_init();
    if (curl_ == nullptr) throw std::bad_alloc();
  }
  ~HttpBackend() override { curl_easy_cleanup(curl_); }
  HttpBackend(const HttpBackend &) = delete;
  HttpBackend &operator=(const HttpBackend &) = delete;

  std::string display_url() const override { return url_.base; }

  std::optional<std::string> get(const std::string &key) override {
    validate_key(key);
    Response response = request("GET", key, url_.base + "/" + key);
    if (response.status == 200) return std::move(response.body);
    if (response.status == 404) return std::nullopt;
    throw_status("GET", key, response.status);
  }

  bool get_to(const std::string &key, const Sink &sink) override {
    validate_key(key);
    const long status = request("GET", key, url_.base + "/" + key, nullptr, {}, &sink).status;
    if (status == 200) return true;
    if (status == 404) return false;
    throw_status("GET", key, status);
  }

  bool put_new(const std::string &key, const std::string &value) override {
    validate_key(key);
    refuse_too_large(key, value);
    const std::string url = url_.base + "/" + key;
    const long head = request("HEAD", key, url).status;
    if (head == 200 || head == 204) return false;
    if (head != 404) throw_status("HEAD", key, head);
    // A server that honours If-None-Match refuses a value another writer stored since the HEAD.
    const std::vector<std::string> absent{"If-None-Match: *"};
    long put = request("PUT", key, url, &value, absent).status;
    if (put == 409) {  // RFC 4918: the collections above must exist (nginx's create_full_put_path makes them)
      create_parents(key);
      put = request("PUT", key, url, &value, absent).status;
    }
    if (put == 412) return false;
    if (put == 200 || put == 201 || put == 204) return true;
    throw_status("PUT", key, put);
  }

  bool replace(const std::string &key, const std::string &expected, const std::string &value) override {
    validate_key(key);
    refuse_too_large(key, value);
    const std::string url = url_.base + "/" + key;
    const Response current = request("GET", key, url);
    if (current.status == 404) return false;
    if (current.status != 200) throw_status("GET", key, current.status);
    if (current.body != expected) return false;
    // If-Match makes the PUT fail (412) once the value changed since this GET, on a server that
    // honours it; a weak ETag never matches (RFC 9110), so none is sent for one.
    std::vector<std::string> headers;
    if (!current.etag.empty() && current.etag.rfind("W/", 0) != 0) headers.push_back("If-Match: " + current.etag);
    const long put = request("PUT", key, url, &value, headers).status;
    if (put == 412) return false;
    if (put == 200 || put == 201 || put == 204) return true;
    throw_status("PUT", key, put);
  }

  std::string ping() override {
    const long status = request("HEAD", "(the prefix)", url_.base + "/").status;
    if (status < 500) return "HTTP " + std::to_string(status);
    throw_status("HEAD", "(the prefix)", status);
  }

  bool acquire_lease(const std::string &key, const std::string &holder, double /*ttl_s: see backend.hpp*/) override {
    validate_key(key);
    const std::string collection = url_.base + "/" + key + "/";
    long status = request("MKCOL", key + "/", collection).status;
    if (status == 409) {  // a parent collection is missing (the first lease of a consumer)
      create_parents(key);
      status = request("MKCOL", key + "/", collection).status;
    }
    if (status == 405 && !current_lease(key)) {
      // 405 is "exists" -- or a server that does not allow MKCOL at all. No lease there: either
      // its holder released it just now (then this MKCOL takes it) or MKCOL is not allowed.
      status = request("MKCOL", key + "/", collection).status;
      if (status == 405 && !current_lease(key)) throw_status("MKCOL", key + "/", status);
    }
    if (status == 405) return false;
    if (status != 201) throw_status("MKCOL", key + "/", status);
    try {
      write_holder(key, holder, 0);
    } catch (...) {
      // An empty lease collection would block the others until they break it: best effort.
      try {
        request("DELETE", key + "/", collection);
      } catch (const RemoteError &) {
      }
      throw;
    }
    return true;
  }

  // Does nothing when `holder` no longer holds the lease. Between the GET and the PUT another
  // machine may break and take it; the PUT then overwrites its holder file and both build:
  // harmless, the values are content-addressed (plain HTTP has no compare-and-swap).
  void renew_lease(const std::string &key, const std::string &holder, double /*ttl_s*/) override {
    validate_key(key);
    const auto count = holder_count(key, holder);
    if (count) write_holder(key, holder, *count + 1);
  }

  void release_lease(const std::string &key, const std::string &holder) override {
    validate_key(key);
    if (holder_count(key, holder)) remove_collection(key);
  }

  std::optional<std::string> current_lease(const std::string &key) override {
    validate_key(key);
    Response file = request("GET", key + "/holder", url_.base + "/" + key + "/holder");
    if (file.status == 200) return std::move(file.body);
    if (file.status != 404) throw_status("GET", key + "/holder", file.status);
    // No holder file: is there a collection (a holder between its MKCOL and its PUT)? nginx
    // answers 403 for an existing directory without an index file, 404 for none.
    const long status = request("HEAD", key + "/", url_.base + "/" + key + "/").status;
    if (status == 404) return std::nullopt;
    if (status == 200 || status == 204 || status == 207 || status == 403) return std::string();
    throw_status("HEAD", key + "/", status);
  }

  void break_lease(const std::string &key) override {
    validate_key(key);
    remove_collection(key);
  }

 private:
  struct Response {
    long status = 0;
    std::string body;
    std::string etag;  // GET: the ETag header's value, "" when there is none
  };

  [[noreturn]] void throw_status(const char *method, const std::string &key, long status) const {
    throw RemoteError("remote cache " + url_.base + ": " + method + " " + key + ": " + http_status_text(status));
  }

  void refuse_too_large(const std::string &key, const std::string &value) const {
    if (value.size() > endpoint_.max_bytes) {
      throw RemoteError("remote cache " + url_.base + ": PUT " + key + ": the value is " +
                        std::to_string(value.size()) + " bytes, more than the endpoint's max_bytes (" +
                        std::to_string(endpoint_.max_bytes) + "): not sent (raise max_bytes to store it)");
    }
  }

  // One request. `what` names the key (or path) in messages; `headers` are sent with a PUT.
  // Throws RemoteError when there is no HTTP answer at all; any status comes back for the
  // caller to judge. With `stream`, a GET's body goes there instead of into the response.
  Response request(const char *method, const std::string &what, const std::string &url,
                   const std::string *upload = nullptr, const std::vector<std::string> &headers = {},
                   const Sink *stream = nullptr) {
    curl_easy_reset(curl_);
    Response response;
    HttpSink sink;
    const bool is_get = std::strcmp(method, "GET") == 0;
    sink.body = is_get && stream == nullptr ? &response.body : nullptr;
    sink.stream = stream;
    sink.curl = curl_;
    // Any body is bounded: a value by max_bytes, an error page or a lease's text by the same.
    sink.limit = endpoint_.max_bytes;
    HttpSource source;
    source.data = upload;
    char error[CURL_ERROR_SIZE] = "";

    CURLcode set = CURLE_OK;
    const auto option = [&set](CURLcode rc) {
      if (set == CURLE_OK) set = rc;
    };
    option(curl_easy_setopt(curl_, CURLOPT_URL, url.c_str()));
    option(curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error));
    option(curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L));  // no SIGALRM for DNS timeouts in a host's threads
    option(curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, http_milliseconds(endpoint_.connect_timeout_s)));
    option(curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, http_milliseconds(endpoint_.timeout_s)));
    option(curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 0L));
#if LIBCURL_VERSION_NUM >= 0x075500
    option(curl_easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https"));
#else
    option(curl_easy_setopt(curl_, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS)));
#endif
    option(curl_easy_setopt(curl_, CURLOPT_USERAGENT, "kiln-remote-cache"));
    if (url_.user || url_.password) {
      option(curl_easy_setopt(curl_, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC)));
      option(curl_easy_setopt(curl_, CURLOPT_USERNAME, url_.user ? url_.user->c_str() : ""));
      option(curl_easy_setopt(curl_, CURLOPT_PASSWORD, url_.password ? url_.password->c_str() : ""));
    }
    // Always our own write function: libcurl's default writes the body to stdout.
    option(curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, http_write_body));
    option(curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &sink));
    HttpHeaderList sent;
    if (is_get) {
      option(curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L));
      option(curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, http_read_etag));
      option(curl_easy_setopt(curl_, CURLOPT_HEADERDATA, &response.etag));
      // Refused from the Content-Length, before any of the body arrives.
      option(curl_easy_setopt(curl_, CURLOPT_MAXFILESIZE_LARGE,
                              static_cast<curl_off_t>(std::min<std::uint64_t>(endpoint_.max_bytes, INT64_MAX))));
    } else if (std::strcmp(method, "HEAD") == 0) {
      option(curl_easy_setopt(curl_, CURLOPT_NOBODY, 1L));
    } else if (std::strcmp(method, "PUT") == 0) {
      option(curl_easy_setopt(curl_, CURLOPT_UPLOAD, 1L));
      option(curl_easy_setopt(curl_, CURLOPT_READFUNCTION, http_read_body));
      option(curl_easy_setopt(curl_, CURLOPT_READDATA, &source));
      option(curl_easy_setopt(curl_, CURLOPT_SEEKFUNCTION, http_seek_body));
      option(curl_easy_setopt(curl_, CURLOPT_SEEKDATA, &source));
      option(curl_easy_setopt(curl_, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(upload->size())));
      // Expect: 100-continue costs a round trip per PUT (and a second's wait on servers that ignore it).
      sent.append("Expect:");
      for (const auto &header : headers) sent.append(header);
      option(curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, sent.list));
    } else {
      // MKCOL, DELETE: the response body (an error page) is read and dropped, so that the
      // connection stays usable for the next request.
      option(curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, method));
    }
    const std::string where = "remote cache " + url_.base + ": " + method + " " + what;
    if (set == CURLE_OUT_OF_MEMORY) throw std::bad_alloc();
    if (set != CURLE_OK) throw RemoteError(where + ": libcurl refused an option: " + curl_easy_strerror(set));

    const CURLcode rc = curl_easy_perform(curl_);
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, nullptr);  // `error` goes out of scope
    if (sink.out_of_memory || rc == CURLE_OUT_OF_MEMORY) throw std::bad_alloc();
    if (sink.stream_failure) std::rethrow_exception(sink.stream_failure);
    if (rc != CURLE_OK) {
      if (sink.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
        throw RemoteError(where + ": the value is larger than the endpoint's max_bytes (" +
                          std::to_string(endpoint_.max_bytes) + "): not read (raise max_bytes to accept it)");
      }
      std::string detail = error[0] != '\0' ? error : curl_easy_strerror(rc);
      long os_errno = 0;  // curl's text does not say why a connect failed ("refused", "no route")
      if (rc == CURLE_COULDNT_CONNECT && curl_easy_getinfo(curl_, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK &&
          os_errno != 0) {
        detail += std::string(": ") + std::strerror(static_cast<int>(os_errno));
      }
      if (rc == CURLE_OPERATION_TIMEDOUT) {
        throw RemoteError(where + ": no answer within the endpoint's timeouts (connect " +
                          http_seconds(endpoint_.connect_timeout_s) + ", request " + http_seconds(endpoint_.timeout_s) +
                          "): " + detail + " (is the server overloaded, or is this an address that never answers?)");
      }
      throw RemoteError(where + ": " + detail + " (is an HTTP server running at this address?)");
    }
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &response.status);
    return response;
  }

  // MKCOL of every collection above `key`, the prefix's included, top down (see the top).
  void create_parents(const std::string &key) {
    const std::string origin = url_.base.substr(0, url_.base.size() - url_.path.size());
    const std::string full = url_.path + "/" + key;
    for (auto slash = full.find('/', 1); slash != std::string::npos; slash = full.find('/', slash + 1)) {
      const std::string path = full.substr(0, slash + 1);
      const long status = request("MKCOL", path, origin + path).status;
      if (status != 201 && status != 405) throw_status("MKCOL", path, status);
    }
  }

  void write_holder(const std::string &key, const std::string &holder, unsigned long count) {
    const std::string text = holder + " " + std::to_string(count);
    const long status = request("PUT", key + "/holder", url_.base + "/" + key + "/holder", &text).status;
    if (status != 200 && status != 201 && status != 204) throw_status("PUT", key + "/holder", status);
  }

  // The renewal count when `holder` holds the lease ("<holder> <count>"), else nullopt.
  std::optional<unsigned long> holder_count(const std::string &key, const std::string &holder) {
    const Response file = request("GET", key + "/holder", url_.base + "/" + key + "/holder");
    if (file.status == 404) return std::nullopt;
    if (file.status != 200) throw_status("GET", key + "/holder", file.status);
    const auto space = file.body.rfind(' ');
    if (space == std::string::npos || file.body.compare(0, space, holder) != 0 || space != holder.size()) {
      return std::nullopt;
    }
    const std::string digits = file.body.substr(space + 1);
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) {
      return 0;  // ours, with a count another kiln wrote differently: start again
    }
    return std::stoul(digits);
  }

  void remove_collection(const std::string &key) {
    // A collection's DELETE removes what is inside (Depth: infinity, the default).
    const long status = request("DELETE", key + "/", url_.base + "/" + key + "/").status;
    if (status != 200 && status != 204 && status != 404) throw_status("DELETE", key + "/", status);
  }

  HttpUrl url_;
  CURL *curl_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_http_backend(const Endpoint &endpoint) { return std::make_unique<HttpBackend>(endpoint); }

}  // namespace kiln::remote
