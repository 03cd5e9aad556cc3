#include "support/fake_stores.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace kiln::test {
namespace {

// Long enough for any case; a client that never stops asking still ends (fake_remotes.hpp).
constexpr std::chrono::seconds kGiveUpAfter(120);

std::string etag_of(unsigned long version) { return "\"v" + std::to_string(version) + "\""; }

std::string resp_bulk(const std::optional<std::string> &value) {
  if (!value) return "$-1\r\n";
  return "$" + std::to_string(value->size()) + "\r\n" + *value + "\r\n";
}

std::string resp_integer(long long value) { return ":" + std::to_string(value) + "\r\n"; }

bool has_word(const std::string &text, const std::string &word) { return text.find(word) != std::string::npos; }

}  // namespace

std::optional<std::string> StoredValues::value(const std::string &key) const {
  std::lock_guard<std::mutex> guard(mutex_);
  const auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void StoredValues::set(const std::string &key, const std::string &value) {
  std::lock_guard<std::mutex> guard(mutex_);
  values_[key] = value;
  versions_[key] = next_version_++;
}

bool StoredValues::erase(const std::string &key) {
  std::lock_guard<std::mutex> guard(mutex_);
  versions_.erase(key);
  return values_.erase(key) > 0;
}

unsigned long StoredValues::version(const std::string &key) const {
  std::lock_guard<std::mutex> guard(mutex_);
  const auto it = versions_.find(key);
  return it == versions_.end() ? 0 : it->second;
}

void StoredValues::before_replace(std::function<void()> hook) {
  std::lock_guard<std::mutex> guard(mutex_);
  hook_ = std::move(hook);
}

void StoredValues::run_replace_hook() {
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    hook.swap(hook_);
  }
  if (hook) hook();
}

std::map<std::string, std::string> StoredValues::all() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return values_;
}

StoringWebDav::StoringWebDav(bool conditional)
    : http_(
          FakeHttp::RequestAnswer([values = values_, conditional](const FakeHttp::Request &request) -> FakeHttp::Reply {
            const std::string prefix = "/kiln/";
            if (request.path.rfind(prefix, 0) != 0) return {404, ""};
            std::string key = request.path.substr(prefix.size());
            const bool collection = key.empty() || key.back() == '/';
            if (collection) {
              // Collections: only whether one was made (MKCOL) matters to kiln's leases.
              const std::string marker = "(collection)" + key;
              if (request.method == "MKCOL") {
                if (values->value(marker)) return {405, ""};
                values->set(marker, "");
                return {201, ""};
              }
              if (request.method == "DELETE") {
                bool any = values->erase(marker);
                for (const auto &[name, unused] : values->all()) {
                  if (name.rfind(key, 0) == 0 || name.rfind("(collection)" + key, 0) == 0) any = values->erase(name) || any;
                }
                return {any ? 204 : 404, ""};
              }
              return {values->value(marker) ? 403 : 404, ""};  // nginx: a directory without an index file
            }
            if (request.method == "GET" || request.method == "HEAD") {
              const auto value = values->value(key);
              if (!value) return {404, ""};
              return {200, *value, {{"ETag", etag_of(values->version(key))}}};
            }
            if (request.method == "PUT") {
              const auto if_match = request.headers.find("if-match");
              const auto if_none_match = request.headers.find("if-none-match");
              if (if_match != request.headers.end()) values->run_replace_hook();
              if (conditional) {
                const bool present = values->value(key).has_value();
                if (if_match != request.headers.end() &&
                    (!present || if_match->second != etag_of(values->version(key)))) {
                  return {412, ""};
                }
                if (if_none_match != request.headers.end() && if_none_match->second == "*" && present) return {412, ""};
              }
              const bool existed = values->value(key).has_value();
              values->set(key, request.body);
              return {existed ? 204 : 201, ""};
            }
            if (request.method == "DELETE") return {values->erase(key) ? 204 : 404, ""};
            return {405, ""};
          }),
          kGiveUpAfter) {}

StoringRedis::StoringRedis()
    : redis_(
          [values = values_](const std::vector<std::string> &command) -> std::string {
            const std::string &verb = command[0];
            if (verb == "PING") return "+PONG\r\n";
            if (verb == "GET" && command.size() == 2) return resp_bulk(values->value(command[1]));
            if (verb == "DEL" && command.size() == 2) return resp_integer(values->erase(command[1]) ? 1 : 0);
            // How kiln streams a value (STRLEN, then GETRANGE pieces): as Redis answers them.
            if (verb == "STRLEN" && command.size() == 2) {
              return resp_integer(static_cast<long long>(values->value(command[1]).value_or("").size()));
            }
            if (verb == "GETRANGE" && command.size() == 4) {
              const std::string value = values->value(command[1]).value_or("");
              const long long first = std::stoll(command[2]), last = std::stoll(command[3]);
              if (first < 0 || last < first || static_cast<std::size_t>(first) >= value.size()) return resp_bulk(std::string());
              return resp_bulk(value.substr(static_cast<std::size_t>(first), static_cast<std::size_t>(last - first + 1)));
            }
            if (verb == "SET" && command.size() >= 3) {
              bool nx = false;
              for (std::size_t i = 3; i < command.size(); ++i) nx = nx || command[i] == "NX";  // PX: no expiry here
              if (nx && values->value(command[1])) return "$-1\r\n";
              values->set(command[1], command[2]);
              return "+OK\r\n";
            }
            // EVAL script 1 KEY ARGV...: kiln's scripts, known by what they call.
            if (verb == "EVAL" && command.size() >= 5 && command[2] == "1") {
              const std::string &script = command[1], &key = command[3], &expected = command[4];
              if (has_word(script, "'SET'") && command.size() == 6) {  // replace
                values->run_replace_hook();
                if (values->value(key) != expected) return resp_integer(0);
                values->set(key, command[5]);
                return resp_integer(1);
              }
              if (has_word(script, "'PEXPIRE'")) return resp_integer(values->value(key) == expected ? 1 : 0);
              if (has_word(script, "'DEL'")) {
                if (values->value(key) != expected) return resp_integer(0);
                return resp_integer(values->erase(key) ? 1 : 0);
              }
            }
            return "-ERR the fake Redis does not know this command\r\n";
          },
          kGiveUpAfter) {}

}  // namespace kiln::test
