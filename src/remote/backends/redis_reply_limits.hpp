// What a Redis reply may be, enforced while hiredis parses it, not after: hiredis builds any
// reply a server sends -- an array of 25 million integers is a few hundred bytes of buffer at a
// time but gigabytes of parsed objects -- so a bound on the unparsed buffer alone does not bound
// memory. The guard wraps the reader's object functions: each object is checked against the
// types the command can answer, the count of objects and the bytes of text before it is made,
// and the first one outside them stops the parse (the connection is then dropped).
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>

namespace kiln::remote {

struct RedisReplyLimits {
  unsigned types = 0;              // RedisReplyLimits::of(REDIS_REPLY_...) of each type accepted
  std::uint64_t max_bytes = 0;     // of every string, status and error in the reply together
  std::uint64_t max_elements = 1;  // objects in the reply (kiln's commands answer one value)

  static constexpr unsigned of(int type) { return 1u << static_cast<unsigned>(type); }
};

class RedisReplyGuard {
 public:
  RedisReplyGuard() = default;
  RedisReplyGuard(const RedisReplyGuard &) = delete;
  RedisReplyGuard &operator=(const RedisReplyGuard &) = delete;

  // Puts the guard between `reader` and its object functions; once per connection, before any
  // reply. The guard must outlive the reader.
  void install(redisReader *reader);
  // Before each reply: what it may be. An error reply is always accepted (within max_bytes).
  void expect(const RedisReplyLimits &limits);
  // Why the parse was stopped; empty when it was not.
  const std::string &refusal() const { return refusal_; }

 private:
  static void *create_string(const redisReadTask *task, char *text, size_t length);
  static void *create_array(const redisReadTask *task, int elements);
  static void *create_integer(const redisReadTask *task, long long value);
  static void *create_nil(const redisReadTask *task);
  static void free_object(void *object);
  // Counts one object of `type` carrying `bytes` of text; false (and refusal_ set) when it is
  // outside the limits.
  bool admit(int type, std::uint64_t bytes, long long elements);

  redisReplyObjectFunctions *defaults_ = nullptr;
  redisReplyObjectFunctions functions_{create_string, create_array, create_integer, create_nil, free_object};
  RedisReplyLimits limits_;
  std::uint64_t bytes_ = 0;
  std::uint64_t elements_ = 0;
  std::string refusal_;
};

}  // namespace kiln::remote
