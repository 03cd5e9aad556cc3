#include "remote/config.hpp"
#include "remote/schemes.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string_view>

#include <kiln/errors.hpp>

#include "files/files.hpp"
#include "files/trusted_file.hpp"
#include "support/environment.hpp"
#include "support/text.hpp"

namespace kiln::remote {

namespace fs = boost::filesystem;
namespace {

std::string trimmed(std::string_view text) { return std::string(support::trim(text)); }

// The non-empty items between separators, trimmed.
std::vector<std::string> split_on(const std::string &text, char separator) {
  std::vector<std::string> parts;
  for (const auto part : support::split(text, separator)) {
    if (!support::trim(part).empty()) parts.push_back(trimmed(part));
  }
  return parts;
}

// A positive number of seconds, at most a day (a longer bound is a typo, not a wish).
double seconds_value(const std::string &value, const std::string &what, const std::string &origin) {
  char *end = nullptr;
  errno = 0;
  const double seconds = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != '\0' || errno != 0 || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > 86400) {
    throw UsageError(origin + ": " + what + " \"" + value + "\" is not a number of seconds in (0, 86400] (e.g. " +
                     what + "=2.5)");
  }
  return seconds;
}

// entry-lifetime: a duration of at least an hour (an entry must outlive the builds that fetch it).
std::int64_t lifetime_value(const std::string &value, const std::string &origin) {
  const auto seconds = bundle::duration_seconds(value);
  if (!seconds || *seconds < 3600) {
    throw UsageError(origin + ": entry-lifetime \"" + value.substr(0, 100) +
                     "\" is not a duration of an hour or more (e.g. entry-lifetime = 90d, or 720h)");
  }
  return *seconds;
}

std::uint64_t bytes_value(const std::string &value, const std::string &origin) {
  std::uint64_t scale = 1;
  std::string digits = value;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k': case 'K': scale = 1ull << 10; break;
      case 'M': scale = 1ull << 20; break;
      case 'G': scale = 1ull << 30; break;
      default: break;
    }
    if (scale != 1) digits.pop_back();
  }
  std::uint64_t number = 0;
  bool ok = !digits.empty() && digits.size() <= 12;
  for (char c : digits) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) number = number * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok || number == 0 || number > (64ull << 30) / scale) {
    throw UsageError(origin + ": max-size \"" + value + "\" is not a size between 1 and 64G (e.g. max-size=512M)");
  }
  return number * scale;
}

bool yes_or_no(const std::string &value, const std::string &what, const std::string &origin) {
  if (value == "yes" || value == "1" || value == "true") return true;
  if (value == "no" || value == "0" || value == "false") return false;
  throw UsageError(origin + ": " + what + " \"" + value.substr(0, 40) + "\" is neither yes nor no");
}

// KILN_REMOTE_TRUST's files. Set to nothing but separators or blanks (a script's "$A:$B" with
// both unset) it would trust nobody in place of kiln.conf's keys -- and with no key trusted,
// any signer or none is accepted: refused instead.
std::vector<std::string> key_files(const std::string &list) {
  std::vector<std::string> files = split_on(list, ':');
  if (files.empty()) {
    throw UsageError("KILN_REMOTE_TRUST is set to \"" + list.substr(0, 100) + "\", which names no key file: that "
                     "would trust no key at all in place of kiln.conf's trust lines (name the PATH.pub files, e.g. "
                     "KILN_REMOTE_TRUST=/etc/kiln/fleet.pub, or unset it to use kiln.conf's)");
  }
  return files;
}

// A key file named in kiln.conf: a relative path is the config file's neighbour, never a file
// of whatever directory kiln happens to run in.
std::string beside(const std::string &config_file, const std::string &value) {
  const fs::path path(value);
  if (path.is_absolute() || config_file.empty()) return value;
  return (fs::path(config_file).parent_path() / path).lexically_normal().string();
}

}  // namespace

Endpoint parse_remote(const std::string &spec, const std::string &origin) {
  const std::vector<std::string> parts = split_on(spec, ';');
  if (parts.empty()) throw UsageError(origin + ": an empty remote (give a URL such as http://host:8080/kiln)");
  Endpoint endpoint;
  endpoint.url = parts.front();
  // The whole spec, redacted, for messages: a ';' inside a password would leave its tail in an
  // "attribute", so the last '@' of the spec, not of the URL, ends what is hidden.
  const std::string shown = redacted_url(spec);
  const Scheme *scheme = find_scheme(endpoint.url);
  if (scheme == nullptr) {
    throw UsageError(origin + ": remote \"" + shown + "\" is not a URL kiln can use: give " + scheme_forms() +
                     " (e.g. http://build1:8080/kiln or redis://build1:6379/0)");
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string &attribute = parts[i];
    const auto equals = attribute.find('=');
    const std::string key = trimmed(attribute.substr(0, equals));
    const std::string value = equals == std::string::npos ? "" : trimmed(attribute.substr(equals + 1));
    if ((key == "read-only" || key == "read-write") && equals == std::string::npos) {
      const auto writes = key == "read-only" ? Endpoint::Writes::never : Endpoint::Writes::always;
      if (endpoint.writes != Endpoint::Writes::unsaid && endpoint.writes != writes) {
        throw UsageError(origin + ": remote " + shown + " is both read-only and read-write: keep one");
      }
      endpoint.writes = writes;
      endpoint.read_only = writes == Endpoint::Writes::never;
    } else if (key == "connect-timeout") {
      endpoint.connect_timeout_s = seconds_value(value, key, origin);
    } else if (key == "timeout") {
      endpoint.timeout_s = seconds_value(value, key, origin);
    } else if (key == "max-size") {
      endpoint.max_bytes = bytes_value(value, origin);
    } else if (equals != std::string::npos && has_attribute(*scheme, key)) {
      endpoint.attributes[key] = value;
    } else if (attribute.find('@') != std::string::npos) {
      // A ';' inside a password splits it: this "attribute" is the password's tail.
      throw UsageError(origin + ": remote " + shown + " has an attribute holding '@' (is a ';' part of a password? "
                       "write it as %3B in the URL)");
    } else {
      throw UsageError(origin + ": unknown attribute \"" + attribute + "\" of remote " + shown +
                       " (known: read-only, read-write, connect-timeout=S, timeout=S, max-size=N[kMG]" +
                       (scheme->attributes.empty() ? std::string() : ", and for " + std::string(scheme->name) + ": " +
                                                                           std::string(scheme->attributes) + "=VALUE") + ")");
    }
  }
  return endpoint;
}

RemoteConfig parse_config_text(const std::string &text, const std::string &file) {
  RemoteConfig config;
  config.config_file = file;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string origin = file + ":" + std::to_string(number);
    const std::string content = trimmed(line.substr(0, line.find('#')));
    if (content.empty()) continue;
    const auto equals = content.find('=');
    if (equals == std::string::npos) {
      throw UsageError(origin + ": \"" + redacted_url(content).substr(0, 200) +
                       "\" is not `key = value` (e.g. remote = http://host:8080/kiln)");
    }
    const std::string key = trimmed(content.substr(0, equals)), value = trimmed(content.substr(equals + 1));
    if (value.empty()) throw UsageError(origin + ": " + key + " has no value");
    if (key == "remote") {
      config.remotes.push_back(parse_remote(value, origin));
    } else if (key == "trust") {
      config.trusted_keys.push_back(beside(file, value));
    } else if (key == "sign") {
      config.signing_key = beside(file, value);
    } else if (key == "accept-unsigned") {
      config.accept_unsigned = yes_or_no(value, key, origin);
    } else if (key == "entry-lifetime") {
      config.entry_lifetime_s = lifetime_value(value, origin);
    } else if (key == "lease_wait") {
      config.lease_wait_s = seconds_value(value, key, origin);
    } else if (key == "retry_after") {
      config.retry_after_s = seconds_value(value, key, origin);
    } else {
      throw UsageError(origin + ": unknown setting \"" + redacted_url(key).substr(0, 100) +
                       "\" (known: remote, trust, sign, accept-unsigned, entry-lifetime, lease_wait, retry_after)");
    }
  }
  return config;
}

fs::path config_file_for(const fs::path &cache_root) {
  if (const auto file = support::env_value("KILN_CONFIG")) return fs::path(*file);
  return cache_root / "kiln.conf";
}

RemoteConfig load_config(const fs::path &config_file) {
  RemoteConfig config;
  std::string text;
  bool present = true;
  try {
    // It names the keys trusted to sign code that runs here: nobody else may edit it.
    text = files::read_trusted_file(config_file, "kiln config", 1 << 20, true);
  } catch (const NotFoundError &) {
    const auto named = support::env_value("KILN_CONFIG");
    if (named && fs::path(*named) == config_file) {
      // Named on purpose and absent: running on without it would silently trust nobody.
      throw NotFoundError("KILN_CONFIG names " + config_file.string() + ", which does not exist: create it, or "
                          "unset KILN_CONFIG to use <cache>/kiln.conf");
    }
    present = false;
  }
  if (present) config = parse_config_text(text, config_file.string());
  if (const auto value = support::env_value("KILN_REMOTE")) {
    config.remotes.clear();
    if (*value != "off") {
      for (const auto &spec : split_on(*value, '|')) config.remotes.push_back(parse_remote(spec, "KILN_REMOTE"));
    }
  }
  if (const auto value = support::env_value("KILN_REMOTE_TRUST")) config.trusted_keys = key_files(*value);
  if (const auto value = support::env_value("KILN_REMOTE_SIGN")) config.signing_key = *value;
  if (const auto value = support::env_value("KILN_REMOTE_ENTRY_LIFETIME")) {
    config.entry_lifetime_s = lifetime_value(*value, "KILN_REMOTE_ENTRY_LIFETIME");
  }
  if (const auto value = support::env_value("KILN_REMOTE_ACCEPT_UNSIGNED")) {
    config.accept_unsigned = yes_or_no(*value, "KILN_REMOTE_ACCEPT_UNSIGNED", "KILN_REMOTE_ACCEPT_UNSIGNED");
  }
  // A remote is written by the machines that sign what they upload (a fleet's build machines)
  // or where its spec says read-write; every other machine only reads it. A laptop or a robot
  // pointed at the fleet's cache never writes into it by accident.
  for (auto &remote : config.remotes) {
    remote.read_only = remote.writes == Endpoint::Writes::unsaid ? config.signing_key.empty()
                                                                 : remote.writes == Endpoint::Writes::never;
  }
  return config;
}

}  // namespace kiln::remote
