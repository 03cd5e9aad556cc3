#include "remote/backends/redis_reply_limits.hpp"

namespace kiln::remote {
namespace {

const char *type_name(int type) {
  switch (type) {
    case REDIS_REPLY_STRING: return "a string";
    case REDIS_REPLY_ARRAY: return "an array";
    case REDIS_REPLY_INTEGER: return "an integer";
    case REDIS_REPLY_NIL: return "nil";
    case REDIS_REPLY_STATUS: return "a status";
    case REDIS_REPLY_ERROR: return "an error";
    default: return "a reply of another type";
  }
}

RedisReplyGuard &guard_of(const redisReadTask *task) { return *static_cast<RedisReplyGuard *>(task->privdata); }

}  // namespace

void RedisReplyGuard::install(redisReader *reader) {
  if (reader->fn != &functions_) defaults_ = reader->fn;
  reader->fn = &functions_;
  reader->privdata = this;
}

void RedisReplyGuard::expect(const RedisReplyLimits &limits) {
  limits_ = limits;
  bytes_ = 0;
  elements_ = 0;
  refusal_.clear();
}

bool RedisReplyGuard::admit(int type, std::uint64_t bytes, long long elements) {
  if (!refusal_.empty()) return false;
  if (type != REDIS_REPLY_ERROR && (limits_.types & RedisReplyLimits::of(type)) == 0) {
    refusal_ = std::string("the server answered ") + type_name(type) +
               (type == REDIS_REPLY_ARRAY ? " of " + std::to_string(elements) + " elements" : std::string()) +
               ", which this command never answers (is this a Redis server?)";
    return false;
  }
  if (++elements_ > limits_.max_elements) {
    refusal_ = "the server's reply holds more than " + std::to_string(limits_.max_elements) +
               " values, which this command never answers (is this a Redis server?)";
    return false;
  }
  bytes_ += bytes;
  if (bytes_ > limits_.max_bytes) {
    refusal_ = "the value is larger than the endpoint's max_bytes (" + std::to_string(limits_.max_bytes) +
               " bytes parsed): not read (raise max_bytes to accept it)";
    return false;
  }
  return true;
}

// Each returns nullptr to stop the parse: hiredis reports that as out of memory, and the
// backend reads refusal() first to tell the two apart.
void *RedisReplyGuard::create_string(const redisReadTask *task, char *text, size_t length) {
  RedisReplyGuard &guard = guard_of(task);
  if (!guard.admit(task->type, length, 0)) return nullptr;
  return guard.defaults_->createString(task, text, length);
}

void *RedisReplyGuard::create_array(const redisReadTask *task, int elements) {
  RedisReplyGuard &guard = guard_of(task);
  if (!guard.admit(REDIS_REPLY_ARRAY, 0, elements)) return nullptr;
  return guard.defaults_->createArray(task, elements);
}

void *RedisReplyGuard::create_integer(const redisReadTask *task, long long value) {
  RedisReplyGuard &guard = guard_of(task);
  if (!guard.admit(REDIS_REPLY_INTEGER, 0, 0)) return nullptr;
  return guard.defaults_->createInteger(task, value);
}

void *RedisReplyGuard::create_nil(const redisReadTask *task) {
  RedisReplyGuard &guard = guard_of(task);
  if (!guard.admit(REDIS_REPLY_NIL, 0, 0)) return nullptr;
  return guard.defaults_->createNil(task);
}

void RedisReplyGuard::free_object(void *object) { freeReplyObject(object); }

}  // namespace kiln::remote
