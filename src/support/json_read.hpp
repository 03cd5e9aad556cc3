// Reading JSON that kiln did not necessarily write (store files, recipes): bounded nesting,
// range-checked integers and short descriptions of hostile values for messages.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace kiln::support {

// No file kiln reads nests deeper than a few levels; 64 leaves room and keeps every later walk
// over the value (copy, dump, compare) far from the stack's end.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`. When it is not JSON (a NUL byte included), nests deeper than kMaxJsonDepth or
// holds a number out of range (1e400), calls fail(detail) -- which throws the caller's typed error naming the file and
// the fix -- with a short detail (never the whole input).
nlohmann::json parse_json(std::string_view text, const std::function<void(const std::string &detail)> &fail);

// The same checks, the value handed to `handler` as events (nlohmann's SAX interface) instead of
// built: a reader that keeps only what it needs of a large file (a manifest of many names).
void parse_json_events(std::string_view text, nlohmann::json::json_sax_t &handler,
                       const std::function<void(const std::string &detail)> &fail);

// Builds a value from events, as json::parse does: for a reader that wants some parts of a
// document whole (one record at a time) and hands it the events of those parts.
class DomBuilder final : public nlohmann::json::json_sax_t {
 public:
  using json = nlohmann::json;
  explicit DomBuilder(json &result) : dom_(result, true) {}
  bool null() override { return dom_.null(); }
  bool boolean(bool value) override { return dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) override { return dom_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) override { return dom_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const json::string_t &text) override {
    return dom_.number_float(value, text);
  }
  bool string(json::string_t &value) override { return dom_.string(value); }
  bool binary(json::binary_t &value) override { return dom_.binary(value); }
  bool start_object(std::size_t size) override { return dom_.start_object(size); }
  bool key(json::string_t &value) override { return dom_.key(value); }
  bool end_object() override { return dom_.end_object(); }
  bool start_array(std::size_t size) override { return dom_.start_array(size); }
  bool end_array() override { return dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string &token, const nlohmann::detail::exception &error) override {
    return dom_.parse_error(position, token, error);
  }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
};

// The value as an integer of type T within [min, max]; nullopt for anything else: 1.9, "1",
// true, 1e30, -1 for an unsigned field, 2^32+1 for an int (nlohmann's get<T>() would truncate,
// round or cast any of these silently).
template <class T>
std::optional<T> checked_integer(const nlohmann::json &value, T min = std::numeric_limits<T>::min(),
                                 T max = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "an integer type");
  if (value.is_number_unsigned()) {  // every non-negative integer nlohmann parses
    const auto number = value.get<std::uint64_t>();
    if constexpr (std::is_signed_v<T>) {
      if (max < 0 || number > static_cast<std::uint64_t>(max)) return std::nullopt;
      if (min > 0 && number < static_cast<std::uint64_t>(min)) return std::nullopt;
    } else {
      if (number < min || number > max) return std::nullopt;
    }
    return static_cast<T>(number);
  }
  if (value.is_number_integer()) {  // negative
    const auto number = value.get<std::int64_t>();
    if constexpr (std::is_signed_v<T>) {
      if (number < min || number > max) return std::nullopt;
    } else {
      return std::nullopt;
    }
    return static_cast<T>(number);
  }
  return std::nullopt;
}

// A value for a message: scalars in their JSON spelling (strings cut at 60 characters),
// objects and lists by kind and size. Never a recursive dump of untrusted input.
std::string describe_json(const nlohmann::json &value);

}  // namespace kiln::support
