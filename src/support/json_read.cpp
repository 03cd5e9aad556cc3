#include "support/json_read.hpp"

#include <stdexcept>

#include "support/json_write.hpp"

namespace kiln::support {
namespace {

using nlohmann::json;

struct TooDeep {};

// Refuses nesting deeper than kMaxJsonDepth as the events pass to the handler behind it.
class DepthBound final : public json::json_sax_t {
 public:
  explicit DepthBound(json::json_sax_t &inner) : inner_(inner) {}
  bool null() override { return inner_.null(); }
  bool boolean(bool value) override { return inner_.boolean(value); }
  bool number_integer(json::number_integer_t value) override { return inner_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) override { return inner_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const json::string_t &text) override {
    return inner_.number_float(value, text);
  }
  bool string(json::string_t &value) override { return inner_.string(value); }
  bool binary(json::binary_t &value) override { return inner_.binary(value); }
  bool start_object(std::size_t size) override { return deeper() && inner_.start_object(size); }
  bool key(json::string_t &value) override { return inner_.key(value); }
  bool end_object() override { return --depth_, inner_.end_object(); }
  bool start_array(std::size_t size) override { return deeper() && inner_.start_array(size); }
  bool end_array() override { return --depth_, inner_.end_array(); }
  bool parse_error(std::size_t position, const std::string &token, const nlohmann::detail::exception &error) override {
    return inner_.parse_error(position, token, error);
  }

 private:
  bool deeper() {
    if (++depth_ > kMaxJsonDepth) throw TooDeep{};
    return true;
  }

  json::json_sax_t &inner_;
  int depth_ = 0;
};

std::string shortened(std::string text) {
  // nlohmann's messages quote the last token read, which may be a whole (huge) string.
  constexpr std::size_t kMax = 200;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace

void parse_json_events(std::string_view text, json::json_sax_t &handler,
                       const std::function<void(const std::string &detail)> &fail) {
  // The parser itself keeps its nesting on the heap; what overflows the stack is a later
  // recursive walk (dump, copy) of a 100k-deep value, so such a value is never built.
  // JSON text never holds a NUL byte, yet nlohmann stops at one and accepts what came before:
  // a file whose tail a crash filled with zeros would read as whole.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    fail("holds a NUL byte at offset " + std::to_string(nul) + " (torn, or not a JSON file)");
  }
  try {
    DepthBound bound(handler);
    json::sax_parse(text.begin(), text.end(), &bound);
    return;
  } catch (const TooDeep &) {
    fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const json::exception &error) {
    fail("not valid JSON: " + shortened(error.what()));
  }
  throw std::logic_error("parse_json: the failure handler returned");
}

json parse_json(std::string_view text, const std::function<void(const std::string &detail)> &fail) {
  // Not json::parse with a parser callback bounding the depth: that parser looks for a discarded
  // member through the whole enclosing object at the end of every object, so an object of n
  // objects (a manifest of 50,000 names) cost n^2 steps (65 s).
  json value;
  DomBuilder dom(value);
  parse_json_events(text, dom, fail);
  return value;
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
