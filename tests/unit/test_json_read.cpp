// The JSON readers every parser shares: checked integers, bounded
// nesting, short descriptions, a writer that never throws on bytes that are not UTF-8.
#include <doctest/doctest.h>

#include <string>

#include "support/json_read.hpp"
#include "support/json_write.hpp"

using kiln::support::checked_integer;
using kiln::support::describe_json;
using kiln::support::parse_json;
using nlohmann::json;

namespace {

json parse_or_fail(const std::string &text, std::string *why) {
  struct Failed {};
  try {
    return parse_json(text, [&](const std::string &detail) {
      *why = detail;
      throw Failed{};
    });
  } catch (const Failed &) {
    return json();
  }
}

}  // namespace

TEST_CASE("json read: checked_integer refuses what get<T>() would truncate, round or cast") {
  CHECK(checked_integer<int>(json::parse("1")) == 1);
  CHECK(checked_integer<int>(json::parse("-7")) == -7);
  CHECK_FALSE(checked_integer<int>(json::parse("4294967297")));  // get<int>() reads 1
  CHECK_FALSE(checked_integer<int>(json::parse("1.9")));         // get<int>() reads 1
  CHECK_FALSE(checked_integer<int>(json::parse("1.0")));
  CHECK_FALSE(checked_integer<int>(json::parse("\"1\"")));
  CHECK_FALSE(checked_integer<int>(json::parse("true")));
  CHECK_FALSE(checked_integer<int>(json::parse("null")));
  CHECK_FALSE(checked_integer<std::uint64_t>(json::parse("-1")));    // get<uint64_t>() reads 2^64-1
  CHECK_FALSE(checked_integer<std::uint64_t>(json::parse("1e30")));  // casting is undefined
  CHECK(checked_integer<std::uint64_t>(json::parse("18446744073709551615")) == 18446744073709551615ull);
  CHECK_FALSE(checked_integer<std::int64_t>(json::parse("18446744073709551615")));
  CHECK(checked_integer<std::uint32_t>(json::parse("4294967295")) == 4294967295u);
  CHECK_FALSE(checked_integer<std::uint32_t>(json::parse("4294967296")));
  CHECK_FALSE(checked_integer<int>(json::parse("0"), 1));   // below min
  CHECK_FALSE(checked_integer<int>(json::parse("11"), 0, 10));  // above max
}

TEST_CASE("json read: nesting is bounded at 64 levels; the limit is exact") {
  std::string why;
  CHECK(parse_or_fail(std::string(64, '[') + std::string(64, ']'), &why).is_array());
  CHECK(why.empty());
  CHECK(parse_or_fail(std::string(65, '[') + std::string(65, ']'), &why).is_null());
  CHECK(why.find("nested deeper than 64") != std::string::npos);
  why.clear();
  parse_or_fail("{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}", &why);
  CHECK(why.find("nested deeper than 64") != std::string::npos);
}

TEST_CASE("json read: malformed text, 1e400 and NUL bytes fail with a short detail") {
  std::string why;
  parse_or_fail("{\"a\": 1e400}", &why);
  CHECK(why.find("1e400") != std::string::npos);
  why.clear();
  parse_or_fail("{\"a\": \"" + std::string(100000, 'x'), &why);  // unterminated 100k string
  CHECK_FALSE(why.empty());
  CHECK(why.size() < 400);
  why.clear();
  parse_or_fail(std::string("{\"a\": 1}\0\0\0", 11), &why);
  CHECK(why.find("NUL byte at offset 8") != std::string::npos);
}

TEST_CASE("json read: describe_json never dumps a container and cuts long strings") {
  CHECK(describe_json(json::parse("[1, [2, [3]]]")) == "a list of 2 item(s)");
  CHECK(describe_json(json::parse("{\"a\": {}}")) == "an object of 1 member(s)");
  CHECK(describe_json(json::parse("1.5")) == "1.5");
  CHECK(describe_json(json(std::string(1000, 'x'))).size() < 80);
  CHECK(describe_json(json(std::string("caf\xe9"))) == "\"caf\xef\xbf\xbd\"");  // never throws on Latin-1
  CHECK(kiln::support::dump_json(json(std::string("caf\xe9"))) == "\"caf\xef\xbf\xbd\"");
}
