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
