// Names of consumers and artifacts: short identifiers, safe as one path component.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::store {

inline constexpr std::size_t kMaxNameLength = 64;

// Throws UsageError naming `what` ("consumer", "artifact name"), the offending text and the rule.
// Accepted: 1..64 characters of [A-Za-z0-9._-], starting with a letter or digit (so never
// ".", ".." or a hidden file), not ending with '.', no "..", no '/', no NUL, ASCII only.
void validate_name(std::string_view what, std::string_view name);

// The same rule as a predicate.
bool is_valid_name(std::string_view name) noexcept;

// A content or input key: exactly 32 lower-case hex digits.
bool is_valid_key(std::string_view key) noexcept;

// A key in 16 bytes instead of a 32-character string: what verify and gc hold per entry, so
// that their memory stays small in a store of a million entries. Orders as the hex text does.
using PackedKey = std::array<std::uint8_t, 16>;
// nullopt when `key` is not a valid key.
std::optional<PackedKey> pack_key(std::string_view key) noexcept;
std::string unpack_key(const PackedKey &key);

}  // namespace kiln::store
