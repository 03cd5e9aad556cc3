// Remote cache servers that keep what they are given, in-process on 127.0.0.1 (built on
// support/fake_remotes.hpp; nothing to install): a WebDAV server and a Redis, with just what
// kiln's backends ask of nginx and redis-server -- WebDAV: GET (with an ETag), HEAD, PUT
// (honouring If-Match and If-None-Match, or ignoring them as nginx's dav module does), MKCOL,
// DELETE; Redis: GET, SET [NX] [PX], DEL, PING and EVAL of kiln's scripts (lease renew and
// release, replace).
//
//   kiln::test::StoringRedis redis;
//   ... KILN_REMOTE = redis.url() ...
//   CHECK(redis.value("cas/tests/" + key) == bundle);
//
// A case can act as another writer between kiln's read of a key and its conditional write
// (before_replace), and look at or set any key directly (value, set).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "support/fake_remotes.hpp"

namespace kiln::test {

// What a storing server holds, shared with its connections' threads.
class StoredValues {
 public:
  std::optional<std::string> value(const std::string &key) const;
  void set(const std::string &key, const std::string &value);
  bool erase(const std::string &key);
  // The key's version: bumped by every write (an HTTP ETag).
  unsigned long version(const std::string &key) const;
  // Runs `hook` (once) when the next conditional write arrives, before it is judged.
  void before_replace(std::function<void()> hook);
  void run_replace_hook();
  std::map<std::string, std::string> all() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string> values_;
  std::map<std::string, unsigned long> versions_;
  unsigned long next_version_ = 1;
  std::function<void()> hook_;
};

// A WebDAV server under /kiln. `conditional`: PUT honours If-Match / If-None-Match (412 when
// they fail), as RFC 9110 servers do; false: ignores them, as nginx's dav module does.
class StoringWebDav {
 public:
  explicit StoringWebDav(bool conditional = true);
  std::string url() const { return http_.url(); }
  // By key, relative to the prefix ("cas/tests/<key>").
  std::optional<std::string> value(const std::string &key) const { return values_->value(key); }
  void set(const std::string &key, const std::string &value) { values_->set(key, value); }
  void before_replace(std::function<void()> hook) { values_->before_replace(std::move(hook)); }
  const FakeServerLog &log() const { return http_.log(); }

 private:
  std::shared_ptr<StoredValues> values_ = std::make_shared<StoredValues>();
  FakeHttp http_;
};

// A Redis; keys are kiln's with its default prefix "kiln:" (value and set take kiln's key).
class StoringRedis {
 public:
  StoringRedis();
  std::string url() const { return redis_.url(); }
  std::optional<std::string> value(const std::string &key) const { return values_->value("kiln:" + key); }
  void set(const std::string &key, const std::string &value) { values_->set("kiln:" + key, value); }
  void before_replace(std::function<void()> hook) { values_->before_replace(std::move(hook)); }
  const FakeServerLog &log() const { return redis_.log(); }

 private:
  std::shared_ptr<StoredValues> values_ = std::make_shared<StoredValues>();
  FakeRedis redis_;
};

}  // namespace kiln::test
