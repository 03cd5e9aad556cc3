#include "support/json_read.hpp"

#include <stdexcept>

#include "support/json_write.hpp"

namespace kiln::support {
namespace {

using nlohmann::json;

struct TooDeep {};

std::string shortened(std::string text) {
  // nlohmann's messages quote the last token read, which may be a whole (huge) string.
  constexpr std::size_t kMax = 200;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace

json parse_json(std::string_view text, const std::function<void(const std::string &detail)> &fail) {
  // The parser itself keeps its nesting on the heap; what overflows the stack is a later
  // recursive walk (dump, copy) of a 100k-deep value, so such a value is never built.
  const json::parser_callback_t bound = [](int depth, json::parse_event_t event, json &) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      throw TooDeep{};
    }
    return true;
  };
  // JSON text never holds a NUL byte, yet nlohmann stops at one and accepts what came before:
  // a file whose tail a crash filled with zeros would read as whole.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    fail("holds a NUL byte at offset " + std::to_string(nul) + " (torn, or not a JSON file)");
  }
  try {
    return json::parse(text.begin(), text.end(), bound);
  } catch (const TooDeep &) {
    fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const json::exception &error) {
    fail("not valid JSON: " + shortened(error.what()));
  }
  throw std::logic_error("parse_json: the failure handler returned");
}

std::string describe_json(const json &value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object of " + std::to_string(value.size()) + " member(s)";
    case json::value_t::array:
      return "a list of " + std::to_string(value.size()) + " item(s)";
    case json::value_t::string: {
      const std::string &text = value.get_ref<const std::string &>();
      if (text.size() <= 60) return dump_json(value);
      return dump_json(json(text.substr(0, 60))) + "...";
    }
    default:
      return dump_json(value);  // a scalar: no recursion
  }
}

}  // namespace kiln::support
