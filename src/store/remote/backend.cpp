#include "store/remote/backend.hpp"

#include <string>

#include <kiln/errors.hpp>

#include "support/text.hpp"

namespace kiln::store::remote {
namespace {

constexpr std::size_t kRemoteMaxKeyLength = 400;

bool remote_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '/';
}


const char *remote_key_violation(const std::string &key) {
  if (key.empty()) return "is empty";
  if (key.size() > kRemoteMaxKeyLength) return "is longer than 400 characters";
  for (const char c : key) {
    if (!remote_key_char(c)) return "contains a character other than letters, digits, '.', '_', '-' and '/'";
  }
  std::size_t start = 0;
  while (true) {
    const auto slash = key.find('/', start);
    const std::string part = key.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty()) return "has an empty part (a leading, trailing or doubled '/')";
    if (part == "." || part == "..") return "has a \".\" or \"..\" part";
    if (slash == std::string::npos) return nullptr;
    start = slash + 1;
  }
}

std::string remote_scheme(const std::string &url) {
  const auto colon = url.find("://");
  if (colon == std::string::npos) return "";
  std::string scheme = url.substr(0, colon);
  for (auto &c : scheme) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return scheme;
}

}  // namespace

std::string redacted_url(const std::string &url) {
  const auto scheme_end = url.find("://");
  const std::size_t authority = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const auto path = url.find('/', authority);
  const auto at = url.rfind('@', path == std::string::npos ? std::string::npos : path);
  if (at == std::string::npos || at < authority) return url;
  return url.substr(0, authority) + "***" + url.substr(at);
}

void validate_key(const std::string &key) {
  if (const char *why = remote_key_violation(key)) {
    throw UsageError("remote cache key \"" + support::printable(key, 120) + "\" " + why +
                     ": use 1-400 characters of letters, digits, '.', '_', '-' and '/', with no empty, \".\" or "
                     "\"..\" part (e.g. \"cas/hjcd-ik/<content key>\")");
  }
}

std::unique_ptr<Backend> make_backend(const Endpoint &endpoint) {
  const std::string scheme = remote_scheme(endpoint.url);
  if (scheme == "http" || scheme == "https") return make_http_backend(endpoint);
  if (scheme == "redis") return make_redis_backend(endpoint);
  throw UsageError("remote cache URL \"" + support::printable(redacted_url(endpoint.url), 120) +
                   "\" is not supported: use http://host[:port]/prefix, https://host[:port]/prefix (credentials "
                   "as http://user:password@host/...) or redis://[:password@]host[:port][/db]");
}

}  // namespace kiln::store::remote
