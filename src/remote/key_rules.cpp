// The rules every backend shares -- what a key may be, how a URL is shown -- compiled into libkiln
// and into the backends' module (libkiln-remote.so), which links nothing of libkiln.
#include "remote/backend.hpp"

#include <string>

#include <kiln/errors.hpp>

#include "support/text.hpp"

namespace kiln::remote {
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

}  // namespace

std::string redacted_url(const std::string &url) {
  const auto scheme_end = url.find("://");
  const std::size_t authority = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  // The last '@' anywhere, not only before the path: a password may hold an unescaped '/'
  // (then the "path" starts inside it). An '@' in a real path hides more than needed: harmless.
  const auto at = url.rfind('@');
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

}  // namespace kiln::remote
